package app

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/controllers/kubeconfig"
	"github.com/clustergate/clustergate/pkg/controllers/session"
	informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
)

// registerObjectMetrics serves the metrics of what Sessions and
// GardenerClusterKubeconfigs are like now, computed at each scrape from this
// replica's own informers, leader or not.
func (o *Options) registerObjectMetrics(sessions informers.SessionInformer, kubeconfigs informers.GardenerClusterKubeconfigInformer) {
	for _, c := range []metrics.StableCollector{
		session.NewCollector(sessions.Lister(), sessions.Informer().HasSynced, clock.RealClock{}),
		kubeconfig.NewCollector(kubeconfigs.Lister(), kubeconfigs.Informer().HasSynced, o.Kubeconfig.Config, clock.RealClock{}),
	} {
		// A second server in one process, as in tests, keeps the first's.
		if err := legacyregistry.CustomRegister(c); err != nil {
			klog.ErrorS(err, "Object metrics not registered")
		}
	}
}
