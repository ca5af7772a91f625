package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	clustergateinformers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
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
	o.AddFlags(cmd.Flags())
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
	// One cache per kind, shared by the proxy and the object metrics (every
	// replica) and the controllers (the leader).
	client, err := versioned.NewForConfig(server.GenericAPIServer.LoopbackClientConfig)
	if err != nil {
		stop()
		return nil, nil, err
	}
	factory := clustergateinformers.NewSharedInformerFactoryWithOptions(client, 0,
		clustergateinformers.WithTransform(controllerutil.DropManagedFields))
	sessions := factory.Clustergate().V1alpha1().Sessions()
	kubeconfigs := factory.Clustergate().V1alpha1().GardenerClusterKubeconfigs()
	o.registerObjectMetrics(sessions, kubeconfigs)
	// Every replica ends its own proxied connections when sessions end.
	server.GenericAPIServer.AddPostStartHookOrDie("start-session-proxy", func(hookCtx genericapiserver.PostStartHookContext) error {
		forget := func(types.UID) {}
		if o.credentialSource != nil {
			forget = o.credentialSource.Forget
			o.credentialInformers.Start(hookCtx.Done())
		}
		if err := o.proxyRegistry.EndWithSessions(sessions.Informer(), forget); err != nil {
			return err
		}
		factory.Start(hookCtx.Done())
		return nil
	})
	if !o.standalone {
		// Controllers read and write through the server's own API, so they
		// start once it serves.
		core := config.GenericConfig.ClientConfig
		credentials := o.credentialInformers.Core().V1().Secrets()
		server.GenericAPIServer.AddPostStartHookOrDie("start-clustergate-controllers", func(hookCtx genericapiserver.PostStartHookContext) error {
			go func() {
				err := controllers.Run(hookCtx, controllers.Config{
					Loopback:       o.withClientLimits(hookCtx.LoopbackClientConfig),
					Core:           o.withClientLimits(core),
					Sessions:       sessions,
					Kubeconfigs:    kubeconfigs,
					Credentials:    credentials,
					Gardener:       o.Gardener,
					Kubeconfig:     o.Kubeconfig,
					Session:        o.Session,
					LeaderElect:    o.LeaderElect,
					LeaseNamespace: o.LeaderElectionNamespace,
				})
				if err != nil {
					klog.ErrorS(err, "Controllers stopped")
				}
			}()
			return nil
		})
	}
	return server, stop, nil
}
