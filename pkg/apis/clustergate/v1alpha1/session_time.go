// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// This file holds a session's time rules: when its access window starts,
// when it expires, how long it may wait for approval, and when it goes
// idle. Validation, the registry, the proxy and the controllers all ask
// them, so that each is written once. They live beside SessionStateAt,
// which needs the idle deadline, because the internal package cannot import
// this one, which imports it for conversion.

// WindowStart is when a session's access window started: at the approval
// of its opening, for a session that needed one, otherwise at its creation.
func WindowStart(s *Session) time.Time {
	var approvedAt *metav1.Time
	if a := s.Status.Approvals; len(a) > 0 && a[0].Type == ApprovalOpen {
		approvedAt = a[0].DecidedAt
	}
	return windowStart(s.CreationTimestamp, approvedAt)
}

// InternalWindowStart is WindowStart of an internal session.
func InternalWindowStart(s *clustergate.Session) time.Time {
	var approvedAt *metav1.Time
	if a := s.Status.Approvals; len(a) > 0 && a[0].Type == clustergate.ApprovalOpen {
		approvedAt = a[0].DecidedAt
	}
	return windowStart(s.CreationTimestamp, approvedAt)
}

// windowStart is the rule of WindowStart over the fields both forms share:
// the opening's decision time, nil while it waits, or the creation.
func windowStart(created metav1.Time, approvedAt *metav1.Time) time.Time {
	if approvedAt != nil {
		return approvedAt.Time
	}
	return created.Time
}

// ExpiryAfter is when a session whose access window starts, or whose
// expiry is extended, at start expires after ttl, at the one-second
// precision that object timestamps are stored in.
func ExpiryAfter(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl).Truncate(time.Second)
}

// ApprovalDeadline is when a session whose opening still waits for an
// approver is removed: timeout after its creation.
func ApprovalDeadline(created metav1.Time, timeout time.Duration) time.Time {
	return created.Add(timeout)
}

// IdleDeadline is when a session ends for want of use: the last recorded
// use (status.lastUsedAt) or, before any, the start of its access window,
// plus spec.idleTimeout. ok is false for a session without an idle timeout
// or whose window has not started (it waits for approval).
func IdleDeadline(s *Session) (deadline time.Time, ok bool) {
	return idleDeadline(s.Spec.IdleTimeout, s.Status.LastUsedAt, s.Status.ExpiresAt, WindowStart(s))
}

// InternalIdleDeadline is IdleDeadline of an internal session.
func InternalIdleDeadline(s *clustergate.Session) (deadline time.Time, ok bool) {
	return idleDeadline(s.Spec.IdleTimeout, s.Status.LastUsedAt, s.Status.ExpiresAt, InternalWindowStart(s))
}

// idleDeadline is the rule of IdleDeadline over the fields both forms
// share; a lastUsedAt before the window's start (none should be) counts as
// the start.
func idleDeadline(timeout *metav1.Duration, lastUsedAt, expiresAt *metav1.Time, start time.Time) (time.Time, bool) {
	if timeout == nil || timeout.Duration <= 0 || expiresAt == nil {
		return time.Time{}, false
	}
	if lastUsedAt != nil && lastUsedAt.After(start) {
		start = lastUsedAt.Time
	}
	return start.Add(timeout.Duration), true
}

// InternalIdleSince says for how long and since when an idle session went
// unused, for the refusals that say why it ended.
func InternalIdleSince(s *clustergate.Session) string {
	deadline, ok := InternalIdleDeadline(s)
	if !ok {
		return "unused for longer than its idle timeout"
	}
	timeout := s.Spec.IdleTimeout.Duration
	return fmt.Sprintf("unused for %s since %s", timeout, deadline.Add(-timeout).UTC().Format(time.RFC3339))
}
