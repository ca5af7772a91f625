// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Lock is the SessionLock that holds a session, as a pass sees it.
type Lock struct {
	// Name and Reason are the lock's.
	Name, Reason string
	// ExpiresAt is when it stops holding; zero is never.
	ExpiresAt time.Time
}

// lockOf returns the lock that holds s now, or nil.
func (c *Controller) lockOf(s *v1alpha1.Session, now time.Time) (*Lock, error) {
	locks, err := c.locks.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	l := v1alpha1.MatchingLock(locks, v1alpha1.LockSubjectOf(s), now)
	if l == nil {
		return nil, nil
	}
	lock := &Lock{Name: l.Name, Reason: l.Spec.Reason}
	if l.Spec.ExpiresAt != nil {
		lock.ExpiresAt = l.Spec.ExpiresAt.Time
	}
	return lock, nil
}

// allSessions returns every session: a lock may match any.
func (c *Controller) allSessions(any) []types.NamespacedName {
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]types.NamespacedName, 0, len(sessions))
	for _, s := range sessions {
		keys = append(keys, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
	}
	return keys
}

// lockedAction is the next step for a session a lock holds: its Ready
// condition says Locked, naming the lock and its reason (the status write
// every replica's connection tracker reacts to, with the event). Its credentials,
// CSR and policy stay, so that it works again at once when the lock goes;
// the next pass comes when the lock or the session expires.
func lockedAction(o Observed, untilExpiry time.Duration) Action {
	s, lock := o.Session, o.Lock
	creds := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionCredentialsReady)
	if creds == nil {
		creds = &metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.SessionReasonCredentialsPending, Message: "credentials are minted once no lock holds the session"}
	}
	msg := v1alpha1.LockMessage(lock.Name, lock.Reason)
	ready := metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonLocked, Message: msg}
	requeue := untilExpiry
	if !lock.ExpiresAt.IsZero() {
		requeue = soonest(requeue, max(lock.ExpiresAt.Sub(o.Now), time.Millisecond))
	}
	a := statusWith(o, *creds, s.Status.BackendURL, policyCondition(o.Policy), ready, requeue)
	if was := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); a.Type == UpdateStatus &&
		(was == nil || was.Reason != v1alpha1.SessionReasonLocked) {
		a.Reason, a.Message, a.EventAction = v1alpha1.SessionReasonLocked, "Session "+msg, "Lock"
	}
	return a
}

// unlocked marks an UpdateStatus that lifts the Locked condition of a
// session, with the event that says so.
func unlocked(o Observed, a Action) Action {
	was := meta.FindStatusCondition(o.Session.Status.Conditions, v1alpha1.SessionConditionReady)
	if a.Type == UpdateStatus && a.Reason == "" && was != nil && was.Reason == v1alpha1.SessionReasonLocked {
		a.Reason, a.Message, a.EventAction = v1alpha1.SessionReasonUnlocked, "Session no longer locked: "+was.Message, "Unlock"
	}
	return a
}
