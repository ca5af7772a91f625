// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionlock is the rule of which SessionLocks hold which
// sessions. The session registry (creates and extensions), every replica's
// proxy registry and the leader's session controller all match through it,
// so that they never disagree on which sessions a lock holds.
package sessionlock

import (
	"slices"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Subject is what locks match a session on.
type Subject struct {
	// User is the owner's user name; Groups the owner's groups as the
	// session recorded them at creation.
	User   string
	Groups []string
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

// Matches says whether the lock holds a session with subject at now: it has
// not expired, and every member of its spec that is given matches (they
// combine with AND). A lock that gives none, which validation refuses,
// matches nothing.
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
	if spec.User == "" && spec.Group == "" && spec.Namespace == "" && shoot == "" && cluster == "" {
		return false
	}
	return (spec.User == "" || spec.User == subject.User) &&
		(spec.Group == "" || slices.Contains(subject.Groups, spec.Group)) &&
		(spec.Namespace == "" || spec.Namespace == subject.Namespace) &&
		(shoot == "" || shoot == subject.Shoot) &&
		(cluster == "" || cluster == subject.Cluster)
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
	var found *v1alpha1.SessionLock
	for _, l := range locks {
		if Matches(l, subject, now) && (found == nil || l.Name < found.Name) {
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
