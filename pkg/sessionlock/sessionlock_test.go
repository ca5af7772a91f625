// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionlock

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func TestMatches(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	alice := Subject{User: "alice", Groups: []string{"sre", "system:authenticated"}, Namespace: "team-a", Shoot: "prod"}
	cluster := Subject{User: "bob", Namespace: "team-b", Cluster: "mc-1"}
	past, future := metav1.NewTime(now.Add(-time.Second)), metav1.NewTime(now.Add(time.Second))
	// dataPlane is alice's session opened under her data-plane name.
	dataPlane := Subject{User: "dataplane:alice@example.com", Namespace: "team-a", Shoot: "prod"}
	// assigned is alice's session assigned with fewer groups than she has:
	// alone, and with her request, authenticated in sre now.
	assigned := Subject{User: "alice", Groups: []string{"system:authenticated"}, Namespace: "team-a", Shoot: "prod"}
	requested := assigned
	requested.Requester = &Person{User: "alice", Groups: []string{"sre", "system:authenticated"}}
	// left is alice's session recorded in sre, used after she left it.
	left := alice
	left.Requester = &Person{User: "alice", Groups: []string{"system:authenticated"}}
	shoot := func(name string) *v1alpha1.SessionLockTarget {
		return &v1alpha1.SessionLockTarget{Shoot: &v1alpha1.ShootReference{Name: name}}
	}
	tests := []struct {
		name    string
		spec    v1alpha1.SessionLockSpec
		subject Subject
		want    bool
	}{
		{name: "user", spec: v1alpha1.SessionLockSpec{User: "alice"}, subject: alice, want: true},
		{name: "other user", spec: v1alpha1.SessionLockSpec{User: "bob"}, subject: alice},
		{name: "garden name leaves the data-plane name", spec: v1alpha1.SessionLockSpec{User: "alice"}, subject: dataPlane},
		{name: "data-plane name in users", spec: v1alpha1.SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}},
			subject: dataPlane, want: true},
		{name: "garden name of user and users", spec: v1alpha1.SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}},
			subject: alice, want: true},
		{name: "users alone", spec: v1alpha1.SessionLockSpec{Users: []string{"dataplane:alice@example.com", "alice"}}, subject: alice, want: true},
		{name: "users of someone else", spec: v1alpha1.SessionLockSpec{Users: []string{"dataplane:bob"}}, subject: dataPlane},
		{name: "users and the target", spec: v1alpha1.SessionLockSpec{Users: []string{"dataplane:alice@example.com"}, Target: shoot("dev")}, subject: dataPlane},
		{name: "session assigned with fewer groups", spec: v1alpha1.SessionLockSpec{Group: "sre"}, subject: assigned},
		{name: "request by the owner in the group now", spec: v1alpha1.SessionLockSpec{Group: "sre"}, subject: requested, want: true},
		{name: "request by the owner in the group, other target", spec: v1alpha1.SessionLockSpec{Group: "sre", Target: shoot("dev")}, subject: requested},
		{name: "user and group of the requester", spec: v1alpha1.SessionLockSpec{User: "alice", Group: "sre"}, subject: requested, want: true},
		{name: "recorded group after the requester left it", spec: v1alpha1.SessionLockSpec{Group: "sre"}, subject: left, want: true},
		{name: "requester in no locked group", spec: v1alpha1.SessionLockSpec{Group: "dev"}, subject: requested},
		{name: "group", spec: v1alpha1.SessionLockSpec{Group: "sre"}, subject: alice, want: true},
		{name: "group the owner is not in", spec: v1alpha1.SessionLockSpec{Group: "dev"}, subject: alice},
		{name: "namespace", spec: v1alpha1.SessionLockSpec{Namespace: "team-a"}, subject: alice, want: true},
		{name: "shoot", spec: v1alpha1.SessionLockSpec{Target: shoot("prod")}, subject: alice, want: true},
		{name: "shoot of the cluster's name", spec: v1alpha1.SessionLockSpec{Target: shoot("mc-1")}, subject: cluster},
		{name: "cluster", spec: v1alpha1.SessionLockSpec{Target: &v1alpha1.SessionLockTarget{Cluster: &v1alpha1.LocalSecretReference{Name: "mc-1"}}},
			subject: cluster, want: true},
		{name: "all given match", spec: v1alpha1.SessionLockSpec{User: "alice", Namespace: "team-a", Target: shoot("prod")}, subject: alice, want: true},
		{name: "one given does not match", spec: v1alpha1.SessionLockSpec{User: "alice", Namespace: "team-b"}, subject: alice},
		{name: "nothing given matches nothing", spec: v1alpha1.SessionLockSpec{Reason: "r"}, subject: alice},
		{name: "expired", spec: v1alpha1.SessionLockSpec{User: "alice", ExpiresAt: &past}, subject: alice},
		{name: "expiring later", spec: v1alpha1.SessionLockSpec{User: "alice", ExpiresAt: &future}, subject: alice, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &v1alpha1.SessionLock{Spec: tt.spec}
			if got := Matches(l, tt.subject, now); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
			var internal clustergate.SessionLock
			if err := v1alpha1.Convert_v1alpha1_SessionLock_To_clustergate_SessionLock(l, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if got := InternalMatches(&internal, tt.subject, now); got != tt.want {
				t.Errorf("InternalMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchingAndNextExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	in := func(d time.Duration) *metav1.Time { at := metav1.NewTime(now.Add(d)); return &at }
	lock := func(name string, expiresAt *metav1.Time) *v1alpha1.SessionLock {
		return &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SessionLockSpec{User: "alice", ExpiresAt: expiresAt}}
	}
	locks := []*v1alpha1.SessionLock{lock("b", in(time.Minute)), lock("a", in(time.Hour)), lock("0-expired", in(-time.Minute))}
	if got := Matching(locks, Subject{User: "alice"}, now); got == nil || got.Name != "a" {
		t.Errorf("Matching = %v, want lock a, the first by name of those in force", got)
	}
	if got := Matching(locks, Subject{User: "bob"}, now); got != nil {
		t.Errorf("Matching bob = %v, want none", got.Name)
	}
	if got, want := NextExpiry(locks, now), now.Add(time.Minute); !got.Equal(want) {
		t.Errorf("NextExpiry = %s, want %s", got, want)
	}
	if got := NextExpiry([]*v1alpha1.SessionLock{lock("a", nil)}, now); !got.IsZero() {
		t.Errorf("NextExpiry of a lock without expiry = %s, want zero", got)
	}
}

// TestHoldsKubeconfig: a lock holds a kept kubeconfig when it names its
// Shoot and no person.
func TestHoldsKubeconfig(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	past := metav1.NewTime(now.Add(-time.Second))
	prod := &v1alpha1.SessionLockTarget{Shoot: &v1alpha1.ShootReference{Name: "prod"}}
	tests := []struct {
		name string
		spec v1alpha1.SessionLockSpec
		want bool
	}{
		{name: "the shoot", spec: v1alpha1.SessionLockSpec{Target: prod}, want: true},
		{name: "the shoot in the namespace", spec: v1alpha1.SessionLockSpec{Target: prod, Namespace: "team-a"}, want: true},
		{name: "the shoot in another namespace", spec: v1alpha1.SessionLockSpec{Target: prod, Namespace: "team-b"}},
		{name: "another shoot", spec: v1alpha1.SessionLockSpec{Target: &v1alpha1.SessionLockTarget{Shoot: &v1alpha1.ShootReference{Name: "dev"}}}},
		{name: "a cluster of the shoot's name", spec: v1alpha1.SessionLockSpec{Target: &v1alpha1.SessionLockTarget{Cluster: &v1alpha1.LocalSecretReference{Name: "prod"}}}},
		{name: "the namespace alone", spec: v1alpha1.SessionLockSpec{Namespace: "team-a"}},
		{name: "a user's sessions to the shoot", spec: v1alpha1.SessionLockSpec{Target: prod, User: "alice"}},
		{name: "a person's sessions to the shoot", spec: v1alpha1.SessionLockSpec{Target: prod, Users: []string{"dataplane:alice"}}},
		{name: "a group's sessions to the shoot", spec: v1alpha1.SessionLockSpec{Target: prod, Group: "sre"}},
		{name: "expired", spec: v1alpha1.SessionLockSpec{Target: prod, ExpiresAt: &past}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"}, Spec: tt.spec}
			if got := HoldsKubeconfig(l, "team-a", "prod", now); got != tt.want {
				t.Errorf("HoldsKubeconfig = %v, want %v", got, tt.want)
			}
			if got := MatchingKubeconfig([]*v1alpha1.SessionLock{l}, "team-a", "prod", now); (got != nil) != tt.want {
				t.Errorf("MatchingKubeconfig = %v, want a lock: %v", got, tt.want)
			}
		})
	}
}
