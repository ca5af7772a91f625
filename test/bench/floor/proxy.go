// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// runProxy serves the target's API at / with the generic server's secure
// serving, the data plane's, until the process is killed.
func runProxy(args []string) error {
	serving := genericoptions.NewSecureServingOptions()
	kubeconfig, err := flags(args, serving.AddFlags)
	if err != nil {
		return err
	}
	if errs := serving.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	var info *genericapiserver.SecureServingInfo
	if err := serving.ApplyTo(&info); err != nil {
		return err
	}
	proxy, cut, err := targetProxy(kubeconfig)
	if err != nil {
		return err
	}
	stopped, _, err := info.Serve(cut.wrap(proxy), 10*time.Second, context.Background().Done())
	if err != nil {
		return err
	}
	<-stopped
	return nil
}
