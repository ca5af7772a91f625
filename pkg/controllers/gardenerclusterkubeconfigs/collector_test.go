// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

func TestCollector(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	object := func(name string, state v1alpha1.KubeconfigState, reason string, lastSync, expires *metav1.Time) *v1alpha1.GardenerClusterKubeconfig {
		obj := &v1alpha1.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Namespace: "kcp", Name: name, UID: types.UID("uid-" + name)},
			Status: v1alpha1.GardenerClusterKubeconfigStatus{State: state, LastSyncTime: lastSync, ExpirationTime: expires}}
		if reason != "" {
			obj.Status.Conditions = []metav1.Condition{{Type: v1alpha1.KubeconfigConditionReady, Reason: reason}}
		}
		return obj
	}
	deleting := object("deleting", v1alpha1.KubeconfigStateReady, v1alpha1.KubeconfigReasonRotated, at(-30*time.Hour), at(-2*time.Hour))
	deleting.DeletionTimestamp = at(-time.Minute)
	// Rotation is due after 60% of the validity; no spread, so the due
	// times are exact.
	cfg := Config{RotationRatio: 0.6}

	tests := []struct {
		name    string
		objects []*v1alpha1.GardenerClusterKubeconfig
		synced  bool
		want    string
	}{
		{name: "cache not synced: nothing, not zeros", synced: false,
			objects: []*v1alpha1.GardenerClusterKubeconfig{object("fresh", v1alpha1.KubeconfigStateReady, v1alpha1.KubeconfigReasonCreated, at(-time.Hour), at(23*time.Hour))}},
		{name: "no objects", synced: true, want: `
clustergate_kubeconfigs_expired 0
clustergate_kubeconfigs_rotation_overdue 0
`},
		{name: "a fleet", synced: true, objects: []*v1alpha1.GardenerClusterKubeconfig{
			// Due in 4.4 h.
			object("fresh", v1alpha1.KubeconfigStateReady, v1alpha1.KubeconfigReasonCreated, at(-10*time.Hour), at(14*time.Hour)),
			// Was due 5.6 h ago.
			object("overdue", v1alpha1.KubeconfigStateReady, v1alpha1.KubeconfigReasonRotated, at(-20*time.Hour), at(4*time.Hour)),
			// Expired an hour ago, and Gardener does not answer.
			object("expired", v1alpha1.KubeconfigStateError, "GardenerUnavailable", at(-25*time.Hour), at(-time.Hour)),
			object("new", "", "", nil, nil),
			object("ghost", v1alpha1.KubeconfigStateError, "ShootNotFound", nil, nil),
			// Expired earliest, but on its way out.
			deleting,
			// Expired, let expire by a lock on its Shoot.
			object("locked", v1alpha1.KubeconfigStateLocked, v1alpha1.KubeconfigReasonLocked, at(-30*time.Hour), at(-6*time.Hour)),
		}, want: fmt.Sprintf(`
clustergate_kubeconfigs{reason="Created",state="Ready"} 1
clustergate_kubeconfigs{reason="Rotated",state="Ready"} 2
clustergate_kubeconfigs{reason="GardenerUnavailable",state="Error"} 1
clustergate_kubeconfigs{reason="ShootNotFound",state="Error"} 1
clustergate_kubeconfigs{reason="",state="Pending"} 1
clustergate_kubeconfigs{reason="Locked",state="Locked"} 1
clustergate_kubeconfigs_expired 1
clustergate_kubeconfigs_rotation_overdue 2
clustergate_kubeconfig_earliest_expiration_timestamp_seconds %d
`, now.Add(-time.Hour).Unix())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, obj := range tt.objects {
				if err := indexer.Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			c := NewCollector(listers.NewGardenerClusterKubeconfigLister(indexer), func() bool { return tt.synced }, cfg, clocktesting.NewFakeClock(now))
			if err := testutil.CustomCollectAndCompare(c, strings.NewReader(collectorHelp+tt.want), "clustergate_kubeconfigs",
				"clustergate_kubeconfigs_expired", "clustergate_kubeconfigs_rotation_overdue", "clustergate_kubeconfig_earliest_expiration_timestamp_seconds"); err != nil {
				t.Error(err)
			}
		})
	}
}

// collectorHelp heads the expected text of the collector's metrics.
const collectorHelp = `
# HELP clustergate_kubeconfigs [ALPHA] GardenerClusterKubeconfigs by state (Ready, Error, Locked, or Pending before the first write) and by the reason of their KubeconfigReady condition.
# TYPE clustergate_kubeconfigs gauge
# HELP clustergate_kubeconfigs_expired [ALPHA] GardenerClusterKubeconfigs whose kubeconfig has expired: their consumers are locked out.
# TYPE clustergate_kubeconfigs_expired gauge
# HELP clustergate_kubeconfigs_rotation_overdue [ALPHA] GardenerClusterKubeconfigs whose kubeconfig is past the time it is rotated at (--kubeconfig-rotation-ratio of its validity) and not yet replaced.
# TYPE clustergate_kubeconfigs_rotation_overdue gauge
# HELP clustergate_kubeconfig_earliest_expiration_timestamp_seconds [ALPHA] When the first of the kubeconfigs expires, in seconds since the epoch; absent while there is none.
# TYPE clustergate_kubeconfig_earliest_expiration_timestamp_seconds gauge
`
