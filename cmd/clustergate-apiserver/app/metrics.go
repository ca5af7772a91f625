package app

import (
	"k8s.io/apimachinery/pkg/api/meta"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/controllers/kubeconfig"
	"github.com/clustergate/clustergate/pkg/controllers/session"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	clustergateinformers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
)

// startObjectMetrics is the post-start hook that serves the metrics of what
// Sessions and GardenerClusterKubeconfigs are like now, computed at each
// scrape from this replica's own informers, leader or not.
func (o *Options) startObjectMetrics(hookCtx genericapiserver.PostStartHookContext) error {
	client, err := versioned.NewForConfig(hookCtx.LoopbackClientConfig)
	if err != nil {
		return err
	}
	// The metrics read spec and status only: managed fields, most of an
	// object's size, stay out of this cache of every object.
	factory := clustergateinformers.NewSharedInformerFactoryWithOptions(client, 0,
		clustergateinformers.WithTransform(stripManagedFields))
	sessions := factory.Clustergate().V1alpha1().Sessions()
	kubeconfigs := factory.Clustergate().V1alpha1().GardenerClusterKubeconfigs()
	for _, c := range []metrics.StableCollector{
		session.NewCollector(sessions.Lister(), sessions.Informer().HasSynced, clock.RealClock{}),
		kubeconfig.NewCollector(kubeconfigs.Lister(), kubeconfigs.Informer().HasSynced, o.Kubeconfig.Config, clock.RealClock{}),
	} {
		// A second server in one process, as in tests, keeps the first's.
		if err := legacyregistry.CustomRegister(c); err != nil {
			klog.ErrorS(err, "Object metrics not registered")
		}
	}
	factory.Start(hookCtx.Done())
	return nil
}

// stripManagedFields drops an object's managed fields before the informer
// caches it.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
