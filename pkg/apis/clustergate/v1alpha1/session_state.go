// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
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

// IdleDeadline is when a session ends for want of use: the last recorded
// use (status.lastUsedAt) or, before any, the start of its access window,
// plus spec.idleTimeout. ok is false for a session without an idle timeout
// or whose window has not started (it waits for approval).
func IdleDeadline(s *Session) (deadline time.Time, ok bool) {
	var decided *metav1.Time
	if a := s.Status.Approvals; len(a) > 0 && a[0].Type == ApprovalOpen {
		decided = a[0].DecidedAt
	}
	return idleDeadline(s.Spec.IdleTimeout, s.Status.LastUsedAt, s.Status.ExpiresAt, s.CreationTimestamp, decided)
}

// InternalIdleDeadline is IdleDeadline of an internal session.
func InternalIdleDeadline(s *clustergate.Session) (deadline time.Time, ok bool) {
	var decided *metav1.Time
	if a := s.Status.Approvals; len(a) > 0 && a[0].Type == clustergate.ApprovalOpen {
		decided = a[0].DecidedAt
	}
	return idleDeadline(s.Spec.IdleTimeout, s.Status.LastUsedAt, s.Status.ExpiresAt, s.CreationTimestamp, decided)
}

// idleDeadline is the rule of IdleDeadline over the fields the internal and
// the versioned Session share. The window starts at the opening's approval,
// or at creation for a session that needed none; a lastUsedAt before it
// (none should be) counts as the start.
func idleDeadline(timeout *metav1.Duration, lastUsedAt, expiresAt *metav1.Time, created metav1.Time, approvedAt *metav1.Time) (time.Time, bool) {
	if timeout == nil || timeout.Duration <= 0 || expiresAt == nil {
		return time.Time{}, false
	}
	base := created.Time
	if approvedAt != nil {
		base = approvedAt.Time
	}
	if lastUsedAt != nil && lastUsedAt.After(base) {
		base = lastUsedAt.Time
	}
	return base.Add(timeout.Duration), true
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

// PendingApproval returns the request of the session that waits for an
// approver, or nil when none does: only the last request can.
func (s *SessionStatus) PendingApproval() *SessionApproval {
	if n := len(s.Approvals); n > 0 && s.Approvals[n-1].Decision == ApprovalPending {
		return &s.Approvals[n-1]
	}
	return nil
}

// Approvers returns the distinct users who approved the request, in the
// order they did.
func (a *SessionApproval) Approvers() []string {
	var names []string
	for _, d := range a.Decisions {
		if d.Decision == ApprovalApproved && !slices.Contains(names, d.Approver) {
			names = append(names, d.Approver)
		}
	}
	return names
}

// RequiredApprovers is how many distinct approvers the request needs: at
// least one.
func (a *SessionApproval) RequiredApprovers() int32 { return max(a.Required, 1) }
