// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// SessionState is where a session stands for its owner's use at a moment.
// The proxy, the owner limit, the controller, approvals and the metrics all
// ask it, so that they never disagree on whether a session may be used or
// is over.
type SessionState string

// The states of a session, in the order they are checked: a session being
// deleted is Deleting whatever else holds.
const (
	// SessionLive is a session its owner may use: Ready, not expired and
	// not being deleted.
	SessionLive SessionState = "Live"
	// SessionNotReady is approved and not expired, but not Ready yet or
	// any more.
	SessionNotReady SessionState = "NotReady"
	// SessionAwaitingApproval has no expiresAt yet: an approval sets it.
	SessionAwaitingApproval SessionState = "AwaitingApproval"
	// SessionExpired has reached its expiresAt.
	SessionExpired SessionState = "Expired"
	// SessionIdle went unused for its spec.idleTimeout: it reached its
	// idle deadline (IdleDeadline), or its Ready condition says Idle,
	// which keeps it over once the controller saw it.
	SessionIdle SessionState = "Idle"
	// SessionLocked is held by a SessionLock: its Ready condition says
	// Locked. The controller sets and lifts that as locks come and go; it
	// is not over, and is Live again once no lock matches it.
	SessionLocked SessionState = "Locked"
	// SessionDeleting is being deleted.
	SessionDeleting SessionState = "Deleting"
)

// Ended says whether the session is over for good, expired, idle or being
// deleted: it counts against no limit and takes no more decisions.
func (s SessionState) Ended() bool {
	return s == SessionExpired || s == SessionIdle || s == SessionDeleting
}

// SessionStateAt returns the state of a session at now.
func SessionStateAt(s *Session, now time.Time) SessionState {
	idle, _ := IdleDeadline(s)
	return sessionState(s.DeletionTimestamp, s.Status.ExpiresAt, s.Status.Conditions, idle, now)
}

// InternalSessionStateAt returns the state of an internal session at now,
// by the same rule as SessionStateAt: the registry and validation hold
// internal objects. It lives here because the internal package cannot
// import this one, which imports it for conversion, and the Ready
// condition's name is defined here.
func InternalSessionStateAt(s *clustergate.Session, now time.Time) SessionState {
	idle, _ := InternalIdleDeadline(s)
	return sessionState(s.DeletionTimestamp, s.Status.ExpiresAt, s.Status.Conditions, idle, now)
}

// sessionState is the rule, over the fields the internal and the versioned
// Session share; a zero idle is no idle deadline. A session is expired from
// the instant of its expiresAt on, and idle from the instant of its idle
// deadline on, as the proxy's timers end its connections then. Once the
// controller marked it Idle it stays so, even if a use recorded late
// would move the deadline.
func sessionState(deletion, expiresAt *metav1.Time, conditions []metav1.Condition, idle time.Time, now time.Time) SessionState {
	ready := meta.FindStatusCondition(conditions, SessionConditionReady)
	switch {
	case deletion != nil:
		return SessionDeleting
	case expiresAt == nil:
		return SessionAwaitingApproval
	case !now.Before(expiresAt.Time):
		return SessionExpired
	case !idle.IsZero() && !now.Before(idle), ready != nil && ready.Reason == SessionReasonIdle:
		return SessionIdle
	case ready != nil && ready.Status != metav1.ConditionTrue && ready.Reason == SessionReasonLocked:
		return SessionLocked
	case ready == nil || ready.Status != metav1.ConditionTrue:
		return SessionNotReady
	}
	return SessionLive
}
