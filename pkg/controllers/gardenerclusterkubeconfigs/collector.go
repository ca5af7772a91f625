// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"math"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// statePending is the state label of an object that has no status yet.
const statePending = "Pending"

// What the objects are like, computed at each scrape from an informer's
// cache: right on every replica, leader or not, and right again at once
// after a restart. No series is per object: a fleet of 100,000 would be
// 100,000 series on every replica. The earliest expiry and the counts tell
// that something is wrong; `kubectl get gck -A --sort-by=.status.expirationTime`
// names the objects.
var (
	kubeconfigsDesc = metrics.NewDesc("clustergate_kubeconfigs",
		"GardenerClusterKubeconfigs by state (Ready, Error, Locked, or Pending before the first write) and by the reason of their KubeconfigReady condition.",
		[]string{"state", "reason"}, nil, metrics.ALPHA, "")
	overdueDesc = metrics.NewDesc("clustergate_kubeconfigs_rotation_overdue",
		"GardenerClusterKubeconfigs whose kubeconfig is past the time it is rotated at (--kubeconfig-rotation-ratio of its validity) and not yet replaced.",
		nil, nil, metrics.ALPHA, "")
	expiredDesc = metrics.NewDesc("clustergate_kubeconfigs_expired",
		"GardenerClusterKubeconfigs whose kubeconfig has expired: their consumers are locked out.",
		nil, nil, metrics.ALPHA, "")
	earliestExpirationDesc = metrics.NewDesc("clustergate_kubeconfig_earliest_expiration_timestamp_seconds",
		"When the first of the kubeconfigs expires, in seconds since the epoch; absent while there is none.",
		nil, nil, metrics.ALPHA, "")
)

// Collector reports the state of the GardenerClusterKubeconfigs in an
// informer's cache. Objects being deleted count by state only: their
// kubeconfigs are on their way out; so do objects a SessionLock holds,
// whose kubeconfigs are let expire on purpose, so that a lock raises no
// rotation or expiry alert.
type Collector struct {
	metrics.BaseStableCollector
	objects listers.GardenerClusterKubeconfigLister
	synced  cache.InformerSynced
	config  Config
	clock   clock.PassiveClock
}

var _ metrics.StableCollector = &Collector{}

// NewCollector returns a collector over objects, which reports nothing until
// synced says the cache is filled: a half-filled cache would report healthy
// zeros. cfg is the controller's, whose rotation times it reproduces.
func NewCollector(objects listers.GardenerClusterKubeconfigLister, synced cache.InformerSynced, cfg Config, clk clock.PassiveClock) *Collector {
	return &Collector{objects: objects, synced: synced, config: cfg, clock: clk}
}

// DescribeWithStability sends the descriptors of the collector's metrics.
func (c *Collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{kubeconfigsDesc, overdueDesc, expiredDesc, earliestExpirationDesc} {
		ch <- d
	}
}

// CollectWithStability sends the metrics computed from the cache now.
func (c *Collector) CollectWithStability(ch chan<- metrics.Metric) {
	if !c.synced() {
		return
	}
	objects, err := c.objects.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	byState := map[[2]string]int{}
	overdue, expired := 0, 0
	earliest := math.Inf(1)
	for _, obj := range objects {
		state, reason := string(obj.Status.State), ""
		if state == "" {
			state = statePending
		}
		if cond := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.KubeconfigConditionReady); cond != nil {
			reason = cond.Reason
		}
		byState[[2]string{state, reason}]++

		lastSync, expiresAt := obj.Status.LastSyncTime, obj.Status.ExpirationTime
		if obj.DeletionTimestamp != nil || obj.Status.State == v1alpha1.KubeconfigStateLocked || expiresAt == nil {
			continue
		}
		earliest = math.Min(earliest, float64(expiresAt.Unix()))
		if !now.Before(expiresAt.Time) {
			expired++
		}
		if lastSync != nil && expiresAt.After(lastSync.Time) && !now.Before(RotationTime(lastSync.Time, expiresAt.Time, c.config)) {
			overdue++
		}
	}
	for k, n := range byState {
		ch <- metrics.NewLazyConstMetric(kubeconfigsDesc, metrics.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- metrics.NewLazyConstMetric(overdueDesc, metrics.GaugeValue, float64(overdue))
	ch <- metrics.NewLazyConstMetric(expiredDesc, metrics.GaugeValue, float64(expired))
	if !math.IsInf(earliest, 1) {
		ch <- metrics.NewLazyConstMetric(earliestExpirationDesc, metrics.GaugeValue, earliest)
	}
}
