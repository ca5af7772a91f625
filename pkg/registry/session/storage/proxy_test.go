// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/credentials"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

func TestProxyCheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := func(owner clustergate.SessionOwner, expiresAt time.Time) *clustergate.Session {
		at := metav1.NewTime(expiresAt)
		return &clustergate.Session{
			ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: ns},
			Spec:       clustergate.SessionSpec{Owner: owner},
			Status: clustergate.SessionStatus{ExpiresAt: &at, Conditions: []metav1.Condition{
				{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "SessionReady"}}},
		}
	}
	withUID := clustergate.SessionOwner{Username: "alice", UID: "uid-1"}
	withoutUID := clustergate.SessionOwner{Username: "alice"}
	tests := []struct {
		name    string
		user    user.Info
		session *clustergate.Session
		check   func(error) bool
	}{
		{name: "owner by name and UID", user: &user.DefaultInfo{Name: "alice", UID: "uid-1"}, session: ready(withUID, now.Add(time.Hour))},
		{name: "owner's name with another UID", user: &user.DefaultInfo{Name: "alice", UID: "uid-2"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "owner's name without the UID", user: &user.DefaultInfo{Name: "alice"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "owner by name when the session has no UID", user: &user.DefaultInfo{Name: "alice", UID: "any"}, session: ready(withoutUID, now.Add(time.Hour))},
		{name: "someone else", user: &user.DefaultInfo{Name: "bob", UID: "uid-1"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "no user", session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "expired", user: &user.DefaultInfo{Name: "alice", UID: "uid-1"}, session: ready(withUID, now), check: func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonGone }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := genericapirequest.NewContext()
			if tt.user != nil {
				ctx = genericapirequest.WithUser(ctx, tt.user)
			}
			err := (&ProxyREST{clock: clocktesting.NewFakePassiveClock(now)}).check(ctx, tt.session)
			switch {
			case tt.check == nil && err != nil:
				t.Errorf("got %v, want the owner let through", err)
			case tt.check != nil && !tt.check(err):
				t.Errorf("got %v", err)
			}
		})
	}
}

// sessionCache is an informer of sessions as sessions/proxy reads it: its
// lister and whether it has synced.
type sessionCache struct {
	cache.SharedIndexInformer
	indexer cache.Indexer
	synced  bool
}

func (c *sessionCache) Informer() cache.SharedIndexInformer { return c }
func (c *sessionCache) Lister() listers.SessionLister       { return listers.NewSessionLister(c.indexer) }
func (c *sessionCache) HasSynced() bool                     { return c.synced }

// TestProxyReadsTheInformer: sessions/proxy decides on the session as the
// replica's informer holds it, with the same owner check and state rule,
// and reads the storage for what the informer does not hold yet.
func TestProxyReadsTheInformer(t *testing.T) {
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(target.Close)
	u, _ := url.Parse(target.URL)
	informer := &sessionCache{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	scheme := registrytest.Scheme()
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{Limits: validation.DefaultSessionLimits(),
		Proxy: ProxyConfig{Tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{}), Sessions: informer,
			Backends: oneBackend{credentials.Backend{URL: u, Transport: target.Client().Transport.(*http.Transport)}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Session.Destroy)
	create(t, s, newSession("fix", "alice", "local", nil))
	stored := get(t, s, "fix")
	stored.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "CredentialsMinted",
		LastTransitionTime: metav1.Now()}}
	if stored, err = update(registrytest.Context(ns), s.Status, stored); err != nil {
		t.Fatal(err)
	}
	cached := func(change func(*clustergate.Session)) *v1alpha1.Session {
		in := stored.DeepCopy()
		change(in)
		out := &v1alpha1.Session{}
		if err := v1alpha1.Convert_clustergate_Session_To_v1alpha1_Session(in, out, nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	deleting := cached(func(s *clustergate.Session) { s.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
	tests := []struct {
		name   string
		cached *v1alpha1.Session
		synced bool
		check  func(error) bool
	}{
		{name: "the informer's ready session", cached: cached(func(*clustergate.Session) {}), synced: true},
		{name: "a deletion the informer saw before the storage's cache", cached: deleting, synced: true,
			check: func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonGone }},
		{name: "an expiry the informer holds", cached: cached(func(s *clustergate.Session) { s.Status.ExpiresAt = &metav1.Time{Time: time.Now().Add(-time.Second)} }), synced: true,
			check: func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonGone }},
		{name: "another owner in the informer", cached: cached(func(s *clustergate.Session) { s.Spec.Owner.Username = "bob" }), synced: true, check: apierrors.IsForbidden},
		{name: "a session the informer does not hold yet", synced: true},
		{name: "an informer before its first list", cached: deleting},
	}
	ctx := genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: "alice"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			informer.synced = tt.synced
			if err := informer.indexer.Replace(nil, ""); err != nil {
				t.Fatal(err)
			}
			if tt.cached != nil {
				if err := informer.indexer.Add(tt.cached); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Proxy.Open(ctx, "fix", "/version", proxy.WayAggregated, &statusResponder{})
			switch {
			case tt.check == nil && err != nil:
				t.Errorf("got %v, want the owner let through", err)
			case tt.check != nil && !tt.check(err):
				t.Errorf("got %v", err)
			}
		})
	}
}
