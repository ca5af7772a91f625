// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// TestSweepTarget: a binding whose session (by UID) no longer exists is
// removed and counted; one of a live session, also one being deleted, is
// kept, and so is a binding the server did not make.
func TestSweepTarget(t *testing.T) {
	live := scopedSession()
	deleting := scopedSession(deleted, func(s *v1alpha1.Session) { s.Name, s.UID = "rotate-certs", "uid-2" })
	gone := scopedSession(func(s *v1alpha1.Session) { s.UID = "uid-0" })
	foreign := roleBinding(gone, "web", "edit")
	foreign.Name, foreign.Labels = "someone-elses", map[string]string{"app": "x"}
	tests := []struct {
		name     string
		sessions []*v1alpha1.Session
		objects  []runtime.Object
		want     []string
		removed  float64
	}{
		{name: "an orphan among live sessions' bindings",
			sessions: []*v1alpha1.Session{live, deleting},
			objects: []runtime.Object{roleBinding(live, "web", "edit"), roleBinding(deleting, "db", "edit"),
				roleBinding(gone, "db", "edit"), foreign},
			want:    []string{"db/clustergate-session.sre.rotate-certs", "web/clustergate-session.sre.fix-etcd", "web/someone-elses"},
			removed: 1},
		{name: "an older session of a live one's name: its binding goes",
			sessions: []*v1alpha1.Session{live},
			objects:  []runtime.Object{roleBinding(gone, "web", "edit"), roleBinding(live, "db", "edit")},
			want:     []string{"db/clustergate-session.sre.fix-etcd"},
			removed:  1},
		{name: "no sessions left: every binding goes",
			objects: []runtime.Object{roleBinding(live, "web", "edit"), roleBinding(live, "db", "edit")},
			removed: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			for _, s := range tt.sessions {
				if err := indexer.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			targetKube := kubefake.NewClientset(tt.objects...)
			c := &Controller{sessions: listers.NewSessionLister(indexer)}
			before, _ := testutil.GetCounterMetricValue(orphanedBindingsRemoved.WithLabelValues(targetKindCluster))

			if err := c.sweepTarget(context.Background(), sweptTarget{kind: targetKindCluster, name: "mc-1", target: &target{kube: targetKube}}); err != nil {
				t.Fatal(err)
			}
			list, err := targetKube.RbacV1().RoleBindings("").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, b := range list.Items {
				left = append(left, b.Namespace+"/"+b.Name)
			}
			if diff := cmp.Diff(tt.want, left); diff != "" {
				t.Errorf("bindings left (-want +got):\n%s", diff)
			}
			after, _ := testutil.GetCounterMetricValue(orphanedBindingsRemoved.WithLabelValues(targetKindCluster))
			if after-before != tt.removed {
				t.Errorf("counted %v removed, want %v", after-before, tt.removed)
			}
		})
	}
}
