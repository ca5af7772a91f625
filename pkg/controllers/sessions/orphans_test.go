// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
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

// TestKnownTargets: the sweep looks at the marked cluster targets, the
// Shoots scoped sessions name and the Shoots whose admin kubeconfig is
// kept; not at a Shoot only unscoped sessions name, nor at a Secret the
// server wrote.
func TestKnownTargets(t *testing.T) {
	now := created
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Any certificate will do as the targets' CA: nothing is dialled.
	kubeconfig, err := credentials.ClientKubeconfig("https://127.0.0.1:6443", issue(t, key, "ca", nil, now.Add(time.Hour)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Namespace: "clustergate-system", Labels: map[string]string{v1alpha1.LabelClusterTarget: "true"}},
			Data: map[string][]byte{"kubeconfig": kubeconfig}},
		{ObjectMeta: metav1.ObjectMeta{Name: "session-uid-9", Namespace: "clustergate-system",
			Labels: map[string]string{v1alpha1.LabelClusterTarget: "true", credentials.LabelSessionName: "x"}},
			Data: map[string][]byte{"kubeconfig": kubeconfig}},
	} {
		if err := secrets.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	sessions := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	shootOf := func(name string) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) {
			s.Spec.Target = v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: name, Project: "local"}}
		}
	}
	for _, s := range []*v1alpha1.Session{
		session(shootOf("scoped"), scoped("web"), func(s *v1alpha1.Session) { s.Name = "a" }),
		session(shootOf("unscoped"), func(s *v1alpha1.Session) { s.Name = "b" }),
	} {
		if err := sessions.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	g := &countingGardener{kubeconfig: gardener.Kubeconfig{Data: kubeconfig, ExpiresAt: now.Add(gardener.MinExpiration)}}
	c := &Controller{opts: Options{Namespace: "clustergate-system"}, clock: clocktesting.NewFakeClock(now), shoots: newShootAccess(g),
		targets: corelisters.NewSecretLister(secrets), sessions: listers.NewSessionLister(sessions)}
	if _, problem := c.shoots.target(context.Background(), gardener.Shoot{Project: "local", Name: "kept"}, now); problem != nil {
		t.Fatal(problem)
	}

	var got []string
	for _, known := range c.knownTargets(context.Background()) {
		got = append(got, known.kind+"/"+known.name)
	}
	if diff := cmp.Diff([]string{"cluster/mc-1", "shoot/local/kept", "shoot/local/scoped"}, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if g.requests != 2 {
		t.Errorf("%d requests to Gardener, want 2: the kept Shoot's and the scoped session's", g.requests)
	}
}
