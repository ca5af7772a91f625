// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func TestLockMatches(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	alice := LockSubject{User: "alice", Groups: []string{"sre", "system:authenticated"}, Namespace: "team-a", Shoot: "prod"}
	cluster := LockSubject{User: "bob", Namespace: "team-b", Cluster: "mc-1"}
	past, future := metav1.NewTime(now.Add(-time.Second)), metav1.NewTime(now.Add(time.Second))
	// dataPlane is alice's session opened under her data-plane name.
	dataPlane := LockSubject{User: "dataplane:alice@example.com", Namespace: "team-a", Shoot: "prod"}
	// assigned is alice's session assigned with fewer groups than she has:
	// alone, and with her request, authenticated in sre now.
	assigned := LockSubject{User: "alice", Groups: []string{"system:authenticated"}, Namespace: "team-a", Shoot: "prod"}
	requested := assigned
	requested.Requester = &LockPerson{User: "alice", Groups: []string{"sre", "system:authenticated"}}
	// left is alice's session recorded in sre, used after she left it.
	left := alice
	left.Requester = &LockPerson{User: "alice", Groups: []string{"system:authenticated"}}
	shoot := func(name string) *SessionLockTarget {
		return &SessionLockTarget{Shoot: &ShootReference{Name: name}}
	}
	tests := []struct {
		name    string
		spec    SessionLockSpec
		subject LockSubject
		want    bool
	}{
		{name: "user", spec: SessionLockSpec{User: "alice"}, subject: alice, want: true},
		{name: "other user", spec: SessionLockSpec{User: "bob"}, subject: alice},
		{name: "garden name leaves the data-plane name", spec: SessionLockSpec{User: "alice"}, subject: dataPlane},
		{name: "data-plane name in users", spec: SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}},
			subject: dataPlane, want: true},
		{name: "garden name of user and users", spec: SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}},
			subject: alice, want: true},
		{name: "users alone", spec: SessionLockSpec{Users: []string{"dataplane:alice@example.com", "alice"}}, subject: alice, want: true},
		{name: "users of someone else", spec: SessionLockSpec{Users: []string{"dataplane:bob"}}, subject: dataPlane},
		{name: "users and the target", spec: SessionLockSpec{Users: []string{"dataplane:alice@example.com"}, Target: shoot("dev")}, subject: dataPlane},
		{name: "session assigned with fewer groups", spec: SessionLockSpec{Group: "sre"}, subject: assigned},
		{name: "request by the owner in the group now", spec: SessionLockSpec{Group: "sre"}, subject: requested, want: true},
		{name: "request by the owner in the group, other target", spec: SessionLockSpec{Group: "sre", Target: shoot("dev")}, subject: requested},
		{name: "user and group of the requester", spec: SessionLockSpec{User: "alice", Group: "sre"}, subject: requested, want: true},
		{name: "recorded group after the requester left it", spec: SessionLockSpec{Group: "sre"}, subject: left, want: true},
		{name: "requester in no locked group", spec: SessionLockSpec{Group: "dev"}, subject: requested},
		{name: "group", spec: SessionLockSpec{Group: "sre"}, subject: alice, want: true},
		{name: "group the owner is not in", spec: SessionLockSpec{Group: "dev"}, subject: alice},
		{name: "namespace", spec: SessionLockSpec{Namespace: "team-a"}, subject: alice, want: true},
		{name: "shoot", spec: SessionLockSpec{Target: shoot("prod")}, subject: alice, want: true},
		{name: "shoot of the cluster's name", spec: SessionLockSpec{Target: shoot("mc-1")}, subject: cluster},
		{name: "cluster", spec: SessionLockSpec{Target: &SessionLockTarget{Cluster: &LocalSecretReference{Name: "mc-1"}}},
			subject: cluster, want: true},
		{name: "all given match", spec: SessionLockSpec{User: "alice", Namespace: "team-a", Target: shoot("prod")}, subject: alice, want: true},
		{name: "one given does not match", spec: SessionLockSpec{User: "alice", Namespace: "team-b"}, subject: alice},
		{name: "nothing given matches nothing", spec: SessionLockSpec{Reason: "r"}, subject: alice},
		{name: "expired", spec: SessionLockSpec{User: "alice", ExpiresAt: &past}, subject: alice},
		{name: "expiring later", spec: SessionLockSpec{User: "alice", ExpiresAt: &future}, subject: alice, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &SessionLock{Spec: tt.spec}
			if got := LockMatches(l, tt.subject, now); got != tt.want {
				t.Errorf("LockMatches = %v, want %v", got, tt.want)
			}
			var internal clustergate.SessionLock
			if err := Convert_v1alpha1_SessionLock_To_clustergate_SessionLock(l, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if got := InternalLockMatches(&internal, tt.subject, now); got != tt.want {
				t.Errorf("InternalLockMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchingLockAndNextLockExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	in := func(d time.Duration) *metav1.Time { at := metav1.NewTime(now.Add(d)); return &at }
	lock := func(name string, expiresAt *metav1.Time) *SessionLock {
		return &SessionLock{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: SessionLockSpec{User: "alice", ExpiresAt: expiresAt}}
	}
	locks := []*SessionLock{lock("b", in(time.Minute)), lock("a", in(time.Hour)), lock("0-expired", in(-time.Minute))}
	if got := MatchingLock(locks, LockSubject{User: "alice"}, now); got == nil || got.Name != "a" {
		t.Errorf("MatchingLock = %v, want lock a, the first by name of those in force", got)
	}
	if got := MatchingLock(locks, LockSubject{User: "bob"}, now); got != nil {
		t.Errorf("MatchingLock bob = %v, want none", got.Name)
	}
	if got, want := NextLockExpiry(locks, now), now.Add(time.Minute); !got.Equal(want) {
		t.Errorf("NextLockExpiry = %s, want %s", got, want)
	}
	if got := NextLockExpiry([]*SessionLock{lock("a", nil)}, now); !got.IsZero() {
		t.Errorf("NextLockExpiry of a lock without expiry = %s, want zero", got)
	}
}

// TestLockHoldsKubeconfig: a lock holds a kept kubeconfig when it names its
// Shoot and no person.
func TestLockHoldsKubeconfig(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	past := metav1.NewTime(now.Add(-time.Second))
	prod := &SessionLockTarget{Shoot: &ShootReference{Name: "prod"}}
	tests := []struct {
		name string
		spec SessionLockSpec
		want bool
	}{
		{name: "the shoot", spec: SessionLockSpec{Target: prod}, want: true},
		{name: "the shoot in the namespace", spec: SessionLockSpec{Target: prod, Namespace: "team-a"}, want: true},
		{name: "the shoot in another namespace", spec: SessionLockSpec{Target: prod, Namespace: "team-b"}},
		{name: "another shoot", spec: SessionLockSpec{Target: &SessionLockTarget{Shoot: &ShootReference{Name: "dev"}}}},
		{name: "a cluster of the shoot's name", spec: SessionLockSpec{Target: &SessionLockTarget{Cluster: &LocalSecretReference{Name: "prod"}}}},
		{name: "the namespace alone", spec: SessionLockSpec{Namespace: "team-a"}},
		{name: "a user's sessions to the shoot", spec: SessionLockSpec{Target: prod, User: "alice"}},
		{name: "a person's sessions to the shoot", spec: SessionLockSpec{Target: prod, Users: []string{"dataplane:alice"}}},
		{name: "a group's sessions to the shoot", spec: SessionLockSpec{Target: prod, Group: "sre"}},
		{name: "expired", spec: SessionLockSpec{Target: prod, ExpiresAt: &past}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"}, Spec: tt.spec}
			if got := LockHoldsKubeconfig(l, "team-a", ShootReference{Name: "prod", Project: "shop"}, now); got != tt.want {
				t.Errorf("LockHoldsKubeconfig = %v, want %v", got, tt.want)
			}
			if got := MatchingKubeconfigLock([]*SessionLock{l}, "team-a", ShootReference{Name: "prod", Project: "shop"}, now); (got != nil) != tt.want {
				t.Errorf("MatchingKubeconfigLock = %v, want a lock: %v", got, tt.want)
			}
		})
	}
}
