// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command clustergate-apiserver is the clustergate aggregated API server.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/cmd/clustergate-apiserver/app"
	"github.com/clustergate/clustergate/pkg/memlimit"
)

func main() {
	if limit, err := memlimit.SetFromCgroup(memlimit.Ratio); err != nil {
		klog.ErrorS(err, "Reading the container's memory limit; the Go runtime keeps no soft limit")
	} else if limit > 0 {
		klog.InfoS("Go soft memory limit set from the container's", "bytes", limit)
	}
	if memlimit.SetGCPercent(memlimit.GCPercent) {
		klog.InfoS("Go garbage collection target set; GOGC overrides it", "percent", memlimit.GCPercent)
	}
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
