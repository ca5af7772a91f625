// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"fmt"
	"time"
)

// DefaultOptions are the controller's settings, but for the server's
// namespace, which the server passes down: ten sessions at a time, a pending CSR looked at every two seconds, an
// unreachable target tried again after thirty, and Istio policies, when
// turned on, for a gateway serving the data plane on 8444.
func DefaultOptions() Options {
	return Options{
		Config:              Config{CSRPoll: 2 * time.Second, RetryAfter: 30 * time.Second},
		IstioPolicy:         IstioPolicyConfig{Port: 8444},
		Workers:             10,
		OrphanSweepInterval: DefaultOrphanSweepInterval,
	}
}

// Validate checks the options, naming the flags that give them.
func (o Options) Validate() []error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--session-workers must be at least 1"))
	}
	if o.OrphanSweepInterval < time.Second {
		errs = append(errs, fmt.Errorf("--session-orphan-sweep-interval must be at least 1s"))
	}
	if p := o.IstioPolicy.Port; o.IstioPolicy.Namespace != "" && (p < 1 || p > 65535) {
		errs = append(errs, fmt.Errorf("--istio-gateway-port must be a port, got %d", p))
	}
	return errs
}
