// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionlock is the rule of which SessionLocks hold which
// sessions. The session registry (creates and extensions), every replica's
// proxy's connection tracker and the leader's session controller all match through it,
// so that they never disagree on which sessions a lock holds.
package sessionlock

import (
	"slices"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Person is who a lock's user names and group are matched against.
type Person struct {
	User   string
	Groups []string
}

// Subject is what locks match a session, or a request through it, on.
type Subject struct {
	// User is the owner's user name; Groups the owner's groups as the
	// session recorded them at creation.
	User   string
	Groups []string
	// Requester, for a request, is who makes it as authenticated now: the
	// session's snapshot of the owner's groups may be fewer than the
	// person's (an assigner vouched for them), and the person's groups may
	// change after it was taken. Nil for the session alone.
	Requester *Person
	// Namespace is the session's namespace.
	Namespace string
	// Shoot and Cluster name the session's target; one is empty.
	Shoot, Cluster string
}

// SubjectOf is what locks match the session s on.
func SubjectOf(s *v1alpha1.Session) Subject {
	subject := Subject{User: s.Spec.Owner.Username, Groups: s.Spec.Owner.Groups, Namespace: s.Namespace}
	if t := s.Spec.Target.Shoot; t != nil {
		subject.Shoot = t.Name
	}
	if t := s.Spec.Target.Cluster; t != nil {
		subject.Cluster = t.KubeconfigSecretRef.Name
	}
	return subject
}

// InternalSubjectOf is SubjectOf of an internal session.
func InternalSubjectOf(s *clustergate.Session) Subject {
	subject := Subject{User: s.Spec.Owner.Username, Groups: s.Spec.Owner.Groups, Namespace: s.Namespace}
	if t := s.Spec.Target.Shoot; t != nil {
		subject.Shoot = t.Name
	}
	if t := s.Spec.Target.Cluster; t != nil {
		subject.Cluster = t.KubeconfigSecretRef.Name
	}
	return subject
}

// Matches says whether the lock holds a session, or a request, with subject
// at now: it has not expired, and every member of its spec that is given
// matches (they combine with AND). The user names and the group are matched
// against the owner as the session recorded them, and against the
// requester: either holding is enough. A lock that gives none, which
// validation refuses, matches nothing.
func Matches(l *v1alpha1.SessionLock, subject Subject, now time.Time) bool {
	spec := &l.Spec
	if spec.ExpiresAt != nil && !now.Before(spec.ExpiresAt.Time) {
		return false
	}
	var shoot, cluster string
	if t := spec.Target; t != nil {
		if t.Shoot != nil {
			shoot = t.Shoot.Name
		}
		if t.Cluster != nil {
			cluster = t.Cluster.Name
		}
	}
	if !namesPerson(spec) && spec.Namespace == "" && shoot == "" && cluster == "" {
		return false
	}
	person := holdsPerson(spec, Person{User: subject.User, Groups: subject.Groups}) ||
		(subject.Requester != nil && holdsPerson(spec, *subject.Requester))
	return person &&
		(spec.Namespace == "" || spec.Namespace == subject.Namespace) &&
		(shoot == "" || shoot == subject.Shoot) &&
		(cluster == "" || cluster == subject.Cluster)
}

// namesPerson says whether the lock names user names or a group.
func namesPerson(spec *v1alpha1.SessionLockSpec) bool {
	return spec.User != "" || len(spec.Users) > 0 || spec.Group != ""
}

// holdsPerson says whether the lock's user names and group, where given,
// match p: one of the names is p's, and p is in the group.
func holdsPerson(spec *v1alpha1.SessionLockSpec, p Person) bool {
	named := spec.User == "" && len(spec.Users) == 0
	if !named && p.User != "" {
		named = spec.User == p.User || slices.Contains(spec.Users, p.User)
	}
	return named && (spec.Group == "" || slices.Contains(p.Groups, spec.Group))
}

// HoldsKubeconfig says whether the lock holds a GardenerClusterKubeconfig
// of namespace for shoot at now: it names that Shoot as its target, names
// no person (a kept kubeconfig is no one's), and its namespace, if given,
// is the object's. A lock on a cluster target never does: kept
// kubeconfigs are of Shoots.
func HoldsKubeconfig(l *v1alpha1.SessionLock, namespace, shoot string, now time.Time) bool {
	if t := l.Spec.Target; t == nil || t.Shoot == nil || namesPerson(&l.Spec) {
		return false
	}
	return Matches(l, Subject{Namespace: namespace, Shoot: shoot}, now)
}

// MatchingKubeconfig returns, of locks, the one that holds the
// GardenerClusterKubeconfig of namespace for shoot at now (the first by
// name), or nil.
func MatchingKubeconfig(locks []*v1alpha1.SessionLock, namespace, shoot string, now time.Time) *v1alpha1.SessionLock {
	return first(locks, func(l *v1alpha1.SessionLock) bool { return HoldsKubeconfig(l, namespace, shoot, now) })
}

// InternalMatches is Matches of an internal lock.
func InternalMatches(l *clustergate.SessionLock, subject Subject, now time.Time) bool {
	var versioned v1alpha1.SessionLock
	if err := v1alpha1.Convert_clustergate_SessionLock_To_v1alpha1_SessionLock(l, &versioned, nil); err != nil {
		return false
	}
	return Matches(&versioned, subject, now)
}

// Matching returns, of locks, the one that holds subject at now (the first
// by name, so that every replica names the same), or nil.
func Matching(locks []*v1alpha1.SessionLock, subject Subject, now time.Time) *v1alpha1.SessionLock {
	return first(locks, func(l *v1alpha1.SessionLock) bool { return Matches(l, subject, now) })
}

// first returns, of the locks that hold, the first by name, or nil.
func first(locks []*v1alpha1.SessionLock, holds func(*v1alpha1.SessionLock) bool) *v1alpha1.SessionLock {
	var found *v1alpha1.SessionLock
	for _, l := range locks {
		if (found == nil || l.Name < found.Name) && holds(l) {
			found = l
		}
	}
	return found
}

// NextExpiry is the earliest expiry after now of the locks, when one stops
// matching; zero when none expires later.
func NextExpiry(locks []*v1alpha1.SessionLock, now time.Time) time.Time {
	var next time.Time
	for _, l := range locks {
		if at := l.Spec.ExpiresAt; at != nil && at.After(now) && (next.IsZero() || at.Time.Before(next)) {
			next = at.Time
		}
	}
	return next
}

// Message is what refusals, events and the Locked condition say of a lock.
func Message(name, reason string) string {
	return "locked by SessionLock " + name + ": " + reason
}
