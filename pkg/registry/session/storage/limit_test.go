// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// createIn creates a session of owner in namespace.
func createIn(s SessionStorage, namespace, name, owner string, finalizers ...string) error {
	obj := newSession(name, owner, "local", nil)
	obj.Namespace, obj.Finalizers = namespace, finalizers
	_, err := s.Session.Create(registrytest.Context(namespace), obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return err
}

// applyCreate creates a session through Update, as a server-side apply of
// a session that does not exist yet does.
func applyCreate(s SessionStorage, namespace, name, owner string) error {
	obj := newSession(name, owner, "local", nil)
	obj.Namespace = namespace
	_, _, err := s.Session.Update(registrytest.Context(namespace), name, rest.DefaultUpdatedObjectInfo(obj),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
	return err
}

func TestOwnerLimit(t *testing.T) {
	s := newLimitedStorage(t, 2)
	tests := []struct {
		name string
		// before creates what the owner has before the create that counts.
		before func(t *testing.T, owner string)
		// create is the create that is allowed or not.
		create  func(owner string) error
		allowed bool
	}{
		{name: "under the limit", before: func(t *testing.T, owner string) { mustCreate(t, s, "sre", owner+"-1", owner) },
			create: func(owner string) error { return createIn(s, "sre", owner+"-2", owner) }, allowed: true},
		{name: "at the limit, across namespaces", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-1", owner)
			mustCreate(t, s, "prod", owner+"-2", owner)
		}, create: func(owner string) error { return createIn(s, "dev", owner+"-3", owner) }},
		{name: "server-side apply is a create too", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-1", owner)
			mustCreate(t, s, "sre", owner+"-2", owner)
		}, create: func(owner string) error { return applyCreate(s, "sre", owner+"-3", owner) }},
		{name: "others' sessions do not count", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-other-1", owner+"-other")
			mustCreate(t, s, "sre", owner+"-other-2", owner+"-other")
		}, create: func(owner string) error { return createIn(s, "sre", owner+"-1", owner) }, allowed: true},
		{name: "deleted sessions free their place", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-1", owner)
			mustCreate(t, s, "sre", owner+"-2", owner)
			mustDelete(t, s, "sre", owner+"-2")
		}, create: func(owner string) error { return createIn(s, "sre", owner+"-3", owner) }, allowed: true},
		{name: "sessions being deleted do not count", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-1", owner)
			mustCreate(t, s, "sre", owner+"-2", owner, "clustergate.dev/session-cleanup")
			mustDelete(t, s, "sre", owner+"-2")
		}, create: func(owner string) error { return createIn(s, "sre", owner+"-3", owner) }, allowed: true},
		{name: "an update of an existing session is no create", before: func(t *testing.T, owner string) {
			mustCreate(t, s, "sre", owner+"-1", owner)
			mustCreate(t, s, "sre", owner+"-2", owner)
		}, create: func(owner string) error { return applyCreate(s, "sre", owner+"-2", owner) }, allowed: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := fmt.Sprintf("user-%d", i)
			tt.before(t, owner)
			err := tt.create(owner)
			switch {
			case tt.allowed && err != nil:
				t.Fatalf("got %v, want the session created", err)
			case !tt.allowed && !apierrors.IsForbidden(err):
				t.Fatalf("got %v, want Forbidden", err)
			case !tt.allowed && !strings.Contains(err.Error(), fmt.Sprintf(`user %q already has 2 live sessions, the most one owner may have (--session-max-per-owner=2)`, owner)):
				t.Errorf("the refusal does not state the limit: %v", err)
			}
		})
	}
}

func TestOwnerLimitExpiredSessionsDoNotCount(t *testing.T) {
	s := newLimitedStorage(t, 1)
	mustCreate(t, s, "sre", "old", "alice")
	if err := createIn(s, "sre", "new", "alice"); !apierrors.IsForbidden(err) {
		t.Fatalf("second session: got %v, want Forbidden", err)
	}
	// The sessions last an hour.
	s.Session.limit.clock = clocktesting.NewFakePassiveClock(time.Now().Add(2 * time.Hour))
	if err := createIn(s, "sre", "new", "alice"); err != nil {
		t.Fatalf("after the first expired: %v", err)
	}
}

// Creates of one owner racing on one replica end at the limit.
func TestOwnerLimitConcurrentCreates(t *testing.T) {
	const max, tries = 3, 12
	s := newLimitedStorage(t, max)
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Go(func() { errs[i] = createIn(s, "sre", fmt.Sprintf("race-%d", i), "alice") })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !apierrors.IsForbidden(err):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if created != max {
		t.Errorf("%d sessions created, want %d", created, max)
	}
	if len(s.Session.limit.mutexes) != 0 {
		t.Errorf("%d owner mutexes left behind", len(s.Session.limit.mutexes))
	}
}

func TestNoOwnerLimit(t *testing.T) {
	s := newStorage(t)
	for i := range 7 {
		mustCreate(t, s, "sre", fmt.Sprintf("s-%d", i), "alice")
	}
}

func mustCreate(t *testing.T, s SessionStorage, namespace, name, owner string, finalizers ...string) {
	t.Helper()
	if err := createIn(s, namespace, name, owner, finalizers...); err != nil {
		t.Fatalf("create %s/%s: %v", namespace, name, err)
	}
}

func mustDelete(t *testing.T, s SessionStorage, namespace, name string) {
	t.Helper()
	if _, _, err := s.Session.Delete(registrytest.Context(namespace), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s/%s: %v", namespace, name, err)
	}
}
