// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
	lockstorage "github.com/clustergate/clustergate/pkg/registry/sessionlock/storage"
)

// TestLockRefusesCreateExtensionAndApproval stores a lock on alice's
// sessions to the shoot prod: her session there cannot be created, her
// session elsewhere can but cannot be extended once a second lock holds it,
// a waiting session a lock holds cannot be approved (but denied), and every
// refusal is a 403 naming the lock and its reason.
func TestLockRefusesCreateExtensionAndApproval(t *testing.T) {
	scheme := registrytest.Scheme()
	locks, err := lockstorage.NewREST(scheme, registrytest.NewRESTOptions(t, scheme, "sessionlocks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locks.Destroy)
	policy := validation.DefaultSessionLimits()
	policy.ApprovalGroups = sets.New("admin")
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{
		Limits: policy, Locks: locks,
		Proxy: ProxyConfig{Tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Session.Destroy)
	lock := func(name string, spec clustergate.SessionLockSpec) {
		t.Helper()
		if _, err := locks.Create(registrytest.Context(""), &clustergate.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
			rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, err error, lock, reason string) {
		t.Helper()
		if want := "locked by SessionLock " + lock + ": " + reason; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want 403 saying %q", what, err, want)
		}
	}
	lock("prod", clustergate.SessionLockSpec{User: "alice", Target: &clustergate.SessionLockTarget{Shoot: &clustergate.ShootReference{Name: "prod"}}, Reason: "INC-1"})
	// An expired lock holds nothing.
	past := metav1.NewTime(time.Now().Add(-time.Minute))
	lock("old", clustergate.SessionLockSpec{User: "alice", Reason: "INC-0", ExpiresAt: &past})

	_, err = s.Session.Create(registrytest.Context(ns), newSession("prod", "alice", "prod", nil), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	refused("create", err, "prod", "INC-1")
	create(t, s, newSession("prod-bob", "bob", "prod", nil))
	local := create(t, s, newSession("local", "alice", "local", nil))

	lock("alice", clustergate.SessionLockSpec{User: "alice", Namespace: ns, Reason: "INC-2"})
	local.Status.ExpiresAt = &metav1.Time{Time: local.CreationTimestamp.Add(2 * time.Hour)}
	_, err = update(genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: "alice"}), s.Extension, local)
	refused("extension", err, "alice", "INC-2")

	// carol's admin session waits for approval when a lock comes: bob may
	// deny it, not approve it.
	waiting := newSession("waiting", "carol", "local", nil)
	waiting.Spec.AccessLevel.Group = "admin"
	waiting = create(t, s, waiting)
	lock("carol", clustergate.SessionLockSpec{User: "carol", Reason: "INC-3"})
	bob := genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: "bob"})
	decide := func(d clustergate.ApprovalDecision) error {
		obj := waiting.DeepCopy()
		obj.Status.Approvals[0].Decision = d
		_, err := update(bob, s.Approval, obj)
		return err
	}
	refused("approval", decide(clustergate.ApprovalApproved), "carol", "INC-3")
	if err := decide(clustergate.ApprovalDenied); err != nil {
		t.Errorf("denial while locked: %v", err)
	}
}
