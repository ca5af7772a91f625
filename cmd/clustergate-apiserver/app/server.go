// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/term"

	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
)

// NewCommand returns the clustergate-apiserver command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "clustergate-apiserver",
		Short: "Serve clustergate.dev Sessions and GardenerClusterKubeconfigs as an aggregated API server",
		Long: `clustergate-apiserver serves the clustergate.dev API group: Sessions, time-limited
break-glass sessions to target clusters, and GardenerClusterKubeconfigs, dynamic
kubeconfigs for Gardener Shoots kept in Secrets. Register it with an APIService.
Without --etcd-servers it keeps its data in an embedded etcd under --data-dir.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetContext(ctx)
	fss := o.Flags()
	// Flags that libraries register globally (klog's) and --help, in a
	// section of their own, as kube-apiserver prints them.
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name())
	for _, name := range fss.Order {
		cmd.Flags().AddFlagSet(fss.FlagSets[name])
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// Run starts the embedded etcd if there is one, then serves until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	server, stop, err := o.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// Start starts the embedded etcd if there is one and builds the server. The
// returned function stops the embedded etcd; call it after the server stopped.
func (o *Options) Start(ctx context.Context) (*apiserver.Server, func(), error) {
	stop := func() {}
	if o.embeddedEtcdURL != "" {
		etcd, err := embeddedetcd.Start(ctx, filepath.Join(o.DataDir, "etcd"), o.embeddedEtcdURL)
		if err != nil {
			return nil, nil, err
		}
		stop = etcd.Close
	}
	config, err := o.Config()
	if err != nil {
		stop()
		return nil, nil, err
	}
	server, err := config.Complete().New()
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("building the server: %w", err)
	}
	return server, stop, nil
}
