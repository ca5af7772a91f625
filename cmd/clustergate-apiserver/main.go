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

// memoryLimitRatio is the share of the container's memory limit the Go heap
// may use before the garbage collector works harder.
const memoryLimitRatio = 0.9

func main() {
	if limit, err := memlimit.SetFromCgroup(memoryLimitRatio); err != nil {
		klog.ErrorS(err, "Reading the container's memory limit; the Go runtime keeps no soft limit")
	} else if limit > 0 {
		klog.InfoS("Go soft memory limit set from the container's", "bytes", limit)
	}
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
