// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// This file is the rule of which SessionLocks hold which sessions. The
// session registry (creates and extensions), every replica's connection
// tracker and the leader's controllers all match through it, so that they
// never disagree on which sessions a lock holds.

// LockPerson is who a lock's user names and group are matched against.
//
// It is no API type: nothing serves or stores it, so no code is generated
// for it.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
// +protobuf=false
type LockPerson struct {
	User   string
	Groups []string
}

// LockSubject is what locks match a session, or a request through it, on.
//
// It is no API type: nothing serves or stores it, so no code is generated
// for it.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
// +protobuf=false
type LockSubject struct {
	// User is the owner's user name; Groups the owner's groups as the
	// session recorded them at creation.
	User   string
	Groups []string
	// Requester, for a request, is who makes it as authenticated now: the
	// session's snapshot of the owner's groups may be fewer than the
	// person's (an assigner vouched for them), and the person's groups may
	// change after it was taken. Nil for the session alone.
	Requester *LockPerson
	// Namespace is the session's namespace.
	Namespace string
	// Shoot and Cluster name the session's target; one is empty.
	// ShootProject is the Shoot's project.
	Shoot, ShootProject, Cluster string
}

// LockSubjectOf is what locks match the session s on.
func LockSubjectOf(s *Session) LockSubject {
	subject := LockSubject{User: s.Spec.Owner.Username, Groups: s.Spec.Owner.Groups, Namespace: s.Namespace}
	if t := s.Spec.Target.Shoot; t != nil {
		subject.Shoot, subject.ShootProject = t.Name, t.Project
	}
	if t := s.Spec.Target.Cluster; t != nil {
		subject.Cluster = t.KubeconfigSecretRef.Name
	}
	return subject
}

// InternalLockSubjectOf is LockSubjectOf of an internal session.
func InternalLockSubjectOf(s *clustergate.Session) LockSubject {
	subject := LockSubject{User: s.Spec.Owner.Username, Groups: s.Spec.Owner.Groups, Namespace: s.Namespace}
	if t := s.Spec.Target.Shoot; t != nil {
		subject.Shoot, subject.ShootProject = t.Name, t.Project
	}
	if t := s.Spec.Target.Cluster; t != nil {
		subject.Cluster = t.KubeconfigSecretRef.Name
	}
	return subject
}

// LockExpired says whether the lock has reached its spec.expiresAt at now:
// from that instant on it holds nothing.
func LockExpired(l *SessionLock, now time.Time) bool { return lockExpired(l.Spec.ExpiresAt, now) }

// InternalLockExpired is LockExpired of an internal lock.
func InternalLockExpired(l *clustergate.SessionLock, now time.Time) bool {
	return lockExpired(l.Spec.ExpiresAt, now)
}

// lockExpired is the rule of LockExpired over the expiry both forms share;
// a lock without one never expires.
func lockExpired(expiresAt *metav1.Time, now time.Time) bool {
	return expiresAt != nil && !now.Before(expiresAt.Time)
}

// LockMatches says whether the lock holds a session, or a request, with
// subject at now: it has not expired, and every member of its spec that is
// given matches (they combine with AND). The user names and the group are
// matched against the owner as the session recorded them, and against the
// requester: either holding is enough. A lock that gives none, which
// validation refuses, matches nothing.
func LockMatches(l *SessionLock, subject LockSubject, now time.Time) bool {
	spec := &l.Spec
	if LockExpired(l, now) {
		return false
	}
	var shoot *ShootReference
	var cluster string
	if t := spec.Target; t != nil {
		shoot = t.Shoot
		if t.Cluster != nil {
			cluster = t.Cluster.Name
		}
	}
	if !lockNamesPerson(spec) && spec.Namespace == "" && shoot == nil && cluster == "" {
		return false
	}
	person := lockHoldsPerson(spec, LockPerson{User: subject.User, Groups: subject.Groups}) ||
		(subject.Requester != nil && lockHoldsPerson(spec, *subject.Requester))
	return person &&
		(spec.Namespace == "" || spec.Namespace == subject.Namespace) &&
		(shoot == nil || ShootMatches(*shoot, ShootReference{Name: subject.Shoot, Project: subject.ShootProject})) &&
		(cluster == "" || cluster == subject.Cluster)
}

// lockNamesPerson says whether the lock names user names or a group.
func lockNamesPerson(spec *SessionLockSpec) bool {
	return spec.User != "" || len(spec.Users) > 0 || spec.Group != ""
}

// lockHoldsPerson says whether the lock's user names and group, where
// given, match p: one of the names is p's, and p is in the group.
func lockHoldsPerson(spec *SessionLockSpec, p LockPerson) bool {
	named := spec.User == "" && len(spec.Users) == 0
	if !named && p.User != "" {
		named = spec.User == p.User || slices.Contains(spec.Users, p.User)
	}
	return named && (spec.Group == "" || slices.Contains(p.Groups, spec.Group))
}

// LockHoldsKubeconfig says whether the lock holds a
// GardenerClusterKubeconfig of namespace for shoot at now: it names that
// Shoot (ShootMatches) as its target, names no person (a kept kubeconfig is no one's), and
// its namespace, if given, is the object's. A lock on a cluster target
// never does: kept kubeconfigs are of Shoots.
func LockHoldsKubeconfig(l *SessionLock, namespace string, shoot ShootReference, now time.Time) bool {
	if t := l.Spec.Target; t == nil || t.Shoot == nil || lockNamesPerson(&l.Spec) {
		return false
	}
	return LockMatches(l, LockSubject{Namespace: namespace, Shoot: shoot.Name, ShootProject: shoot.Project}, now)
}

// MatchingKubeconfigLock returns, of locks, the one that holds the
// GardenerClusterKubeconfig of namespace for shoot at now (the first by
// name), or nil.
func MatchingKubeconfigLock(locks []*SessionLock, namespace string, shoot ShootReference, now time.Time) *SessionLock {
	return firstLock(locks, func(l *SessionLock) bool { return LockHoldsKubeconfig(l, namespace, shoot, now) })
}

// InternalLockMatches is LockMatches of an internal lock.
func InternalLockMatches(l *clustergate.SessionLock, subject LockSubject, now time.Time) bool {
	var versioned SessionLock
	if err := Convert_clustergate_SessionLock_To_v1alpha1_SessionLock(l, &versioned, nil); err != nil {
		return false
	}
	return LockMatches(&versioned, subject, now)
}

// MatchingLock returns, of locks, the one that holds subject at now (the
// first by name, so that every replica names the same), or nil.
func MatchingLock(locks []*SessionLock, subject LockSubject, now time.Time) *SessionLock {
	return firstLock(locks, func(l *SessionLock) bool { return LockMatches(l, subject, now) })
}

// firstLock returns, of the locks that hold, the first by name, or nil.
func firstLock(locks []*SessionLock, holds func(*SessionLock) bool) *SessionLock {
	var found *SessionLock
	for _, l := range locks {
		if (found == nil || l.Name < found.Name) && holds(l) {
			found = l
		}
	}
	return found
}

// NextLockExpiry is the earliest expiry after now of the locks, when one
// stops matching; zero when none expires later.
func NextLockExpiry(locks []*SessionLock, now time.Time) time.Time {
	var next time.Time
	for _, l := range locks {
		if at := l.Spec.ExpiresAt; at != nil && !LockExpired(l, now) && (next.IsZero() || at.Time.Before(next)) {
			next = at.Time
		}
	}
	return next
}

// LockMessage is what refusals, events and the Locked condition say of a
// lock.
func LockMessage(name, reason string) string {
	return "locked by SessionLock " + name + ": " + reason
}
