// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/credentials"
)

const policyNamespace = "istio-system"

func policy(name string, labels map[string]string) *istiosecurityv1.AuthorizationPolicy {
	return &istiosecurityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNamespace, Labels: labels}}
}

// fakeDiscovery serves AuthorizationPolicies or not.
func fakeDiscovery(served bool) *fakediscovery.FakeDiscovery {
	d := kubefake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	if served {
		d.Resources = []*metav1.APIResourceList{{GroupVersion: istiosecurityv1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: "authorizationpolicies", Namespaced: true, Kind: "AuthorizationPolicy"}}}}
	}
	return d
}

// TestPolicyCache: a pass reads its session's policy from the cache once the
// core cluster serves AuthorizationPolicies; foreign policies of the
// namespace are seen too, so that they are left alone; without the API the
// pass learns so, and nothing is cached.
func TestPolicyCache(t *testing.T) {
	listWithoutWatch(t)
	owned := policy("session-a", credentials.Labels("team", "a"))
	foreign := policy("session-b", nil)
	elsewhere := policy("session-c", credentials.Labels("team", "c"))
	elsewhere.Namespace = "other"
	tests := []struct {
		name       string
		served     bool
		lookup     string
		want       *istiosecurityv1.AuthorizationPolicy
		wantServed bool
	}{
		{name: "the session's policy", served: true, lookup: "session-a", want: owned, wantServed: true},
		{name: "a foreign policy of the session's name", served: true, lookup: "session-b", want: foreign, wantServed: true},
		{name: "no policy", served: true, lookup: "session-x", wantServed: true},
		{name: "a policy of another namespace is not the session's", served: true, lookup: "session-c", wantServed: true},
		{name: "the API is not served", served: false, lookup: "session-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			istio := istiofake.NewSimpleClientset(owned, foreign, elsewhere)
			p := newPolicyCache(istio, fakeDiscovery(tt.served), policyNamespace, cache.ResourceEventHandlerFuncs{})
			p.check(ctx)
			waitSynced(t, p)
			got, served, err := p.get(tt.lookup)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if served != tt.wantServed {
				t.Errorf("served = %v, want %v", served, tt.wantServed)
			}
			if (got == nil) != (tt.want == nil) || got != nil && got.Name != tt.want.Name {
				t.Errorf("policy = %v, want %v", got, tt.want)
			}
			if got != nil && got.ManagedFields != nil {
				t.Errorf("cached policy keeps managedFields")
			}
			if !tt.served && len(istio.Actions()) != 0 {
				t.Errorf("Istio's API was called without being served: %v", istio.Actions())
			}
		})
	}
}

// TestPolicyCacheLater: Istio installed after the controller started is
// picked up at the next check; until its cache is filled, a pass fails
// and is retried rather than taking the policy for missing.
func TestPolicyCacheLater(t *testing.T) {
	listWithoutWatch(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := fakeDiscovery(false)
	p := newPolicyCache(istiofake.NewSimpleClientset(policy("session-a", nil)), d, policyNamespace, cache.ResourceEventHandlerFuncs{})
	p.check(ctx)
	if _, served, err := p.get("session-a"); served || err != nil {
		t.Fatalf("before Istio: served %v, err %v", served, err)
	}
	d.Resources = fakeDiscovery(true).Resources
	p.check(ctx)
	waitSynced(t, p)
	if got, served, err := p.get("session-a"); got == nil || !served || err != nil {
		t.Fatalf("after Istio: %v, served %v, err %v", got, served, err)
	}
	// Found, and its informer not filled yet.
	filling := &policyCache{served: true}
	if _, _, err := filling.get("session-a"); !errors.Is(err, errPoliciesNotSynced) {
		t.Fatalf("found but not cached: err %v, want %v", err, errPoliciesNotSynced)
	}
}

// TestPolicyCacheEvents: a policy's create, update and delete each queue its
// session, so that a pass after an apply sees the applied policy rather than
// applying again.
func TestPolicyCacheEvents(t *testing.T) {
	listWithoutWatch(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	istio := istiofake.NewSimpleClientset()
	events := make(chan types.NamespacedName, 10)
	keyOf := func(obj any) {
		if p, ok := obj.(metav1.Object); ok {
			if key, ok := credentials.SessionOf(p); ok {
				events <- key
			}
		}
	}
	p := newPolicyCache(istio, fakeDiscovery(true), policyNamespace, cache.ResourceEventHandlerFuncs{
		AddFunc: keyOf, UpdateFunc: func(_, obj any) { keyOf(obj) }, DeleteFunc: keyOf})
	p.check(ctx)
	waitSynced(t, p)
	policies := istio.SecurityV1().AuthorizationPolicies(policyNamespace)
	created := policy("session-a", credentials.Labels("team", "a"))
	writes := []func() (runtime.Object, error){
		func() (runtime.Object, error) { return policies.Create(ctx, created, metav1.CreateOptions{}) },
		func() (runtime.Object, error) {
			updated := created.DeepCopy()
			updated.Annotations = map[string]string{"changed": "yes"}
			return policies.Update(ctx, updated, metav1.UpdateOptions{})
		},
		func() (runtime.Object, error) { return nil, policies.Delete(ctx, created.Name, metav1.DeleteOptions{}) },
	}
	for i, write := range writes {
		if _, err := write(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		select {
		case key := <-events:
			if want := (types.NamespacedName{Namespace: "team", Name: "a"}); key != want {
				t.Errorf("write %d queued %v, want %v", i, key, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("write %d queued no session", i)
		}
	}
}

// listWithoutWatch makes informers list, then watch: Istio's fake clientset
// cannot stream a list as a watch, which client-go's informers ask for by
// default.
func listWithoutWatch(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
}

func waitSynced(t *testing.T, p *policyCache) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return p.hasSynced(), nil }); err != nil {
		t.Fatal("the policy cache did not sync")
	}
}

// TestComesBackAsEvent: only what no cache reports (writes on a target) is
// followed by another pass at once.
func TestComesBackAsEvent(t *testing.T) {
	again := map[ActionType]bool{CreateCSR: true, ApproveCSR: true, DeleteCSR: true}
	for _, a := range []ActionType{None, AddFinalizer, DeleteSession, CreatePrivateKey, CreateCSR, ApproveCSR,
		WriteCertificate, ApplyPolicy, UpdateStatus, DeleteCredentials, DeleteCSR, DeletePolicy, RemoveFinalizer} {
		if got := !comesBackAsEvent(a); got != again[a] {
			t.Errorf("%s: another pass at once = %v, want %v", a, got, again[a])
		}
	}
}
