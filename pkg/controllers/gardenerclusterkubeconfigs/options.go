// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"fmt"
	"time"

	"github.com/clustergate/clustergate/pkg/gardener"
)

// DefaultOptions rotate a day-long kubeconfig at 60 % of its validity, ten
// objects at a time, and look at Secrets someone else owns, and at Shoots
// Gardener did not find, again every five minutes.
func DefaultOptions() Options {
	return Options{
		Config:     Config{RotationRatio: 0.6, ConflictRecheck: 5 * time.Minute, GardenerRetry: 5 * time.Minute},
		Expiration: 24 * time.Hour,
		Workers:    10,
	}
}

// Validate checks the options, naming the flags that give them.
func (o Options) Validate() []error {
	var errs []error
	if r := o.RotationRatio; r <= 0 || r >= 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-rotation-ratio must lie between 0 and 1, got %v", r))
	}
	if o.Expiration < gardener.MinExpiration {
		errs = append(errs, fmt.Errorf("--kubeconfig-expiration must be at least %s", gardener.MinExpiration))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-workers must be at least 1"))
	}
	return errs
}
