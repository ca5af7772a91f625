// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestSessionState: one rule, the same for the versioned and the internal
// Session.
func TestSessionState(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	ready := []metav1.Condition{{Type: SessionConditionReady, Status: metav1.ConditionTrue}}
	notReady := []metav1.Condition{{Type: SessionConditionReady, Status: metav1.ConditionFalse}}
	markedIdle := []metav1.Condition{{Type: SessionConditionReady, Status: metav1.ConditionFalse, Reason: SessionReasonIdle}}
	idle := &metav1.Duration{Duration: 10 * time.Minute}
	// The session was created an hour ago: created + idle is long past.
	tests := []struct {
		name        string
		deletion    *metav1.Time
		expiresAt   *metav1.Time
		conditions  []metav1.Condition
		idleTimeout *metav1.Duration
		lastUsedAt  *metav1.Time
		approvedAt  *metav1.Time
		want        SessionState
		wantEnded   bool
	}{
		{name: "used within its idle timeout", expiresAt: at(time.Minute), conditions: ready, idleTimeout: idle, lastUsedAt: at(-9 * time.Minute), want: SessionLive},
		{name: "idle at the instant of its idle deadline", expiresAt: at(time.Minute), conditions: ready, idleTimeout: idle, lastUsedAt: at(-10 * time.Minute),
			want: SessionIdle, wantEnded: true},
		{name: "never used: idle counted from creation", expiresAt: at(time.Minute), conditions: ready, idleTimeout: idle, want: SessionIdle, wantEnded: true},
		{name: "never used: idle counted from approval", expiresAt: at(time.Minute), conditions: ready, idleTimeout: idle, approvedAt: at(-time.Minute), want: SessionLive},
		{name: "no idle timeout", expiresAt: at(time.Minute), conditions: ready, idleTimeout: &metav1.Duration{}, want: SessionLive},
		{name: "marked Idle stays idle after a late use", expiresAt: at(time.Minute), conditions: markedIdle, idleTimeout: idle, lastUsedAt: at(0),
			want: SessionIdle, wantEnded: true},
		{name: "expiry before idleness", expiresAt: at(-time.Minute), conditions: markedIdle, idleTimeout: idle, want: SessionExpired, wantEnded: true},
		{name: "awaiting approval is never idle", conditions: ready, idleTimeout: idle, want: SessionAwaitingApproval},
		{name: "Ready before its expiry", expiresAt: at(time.Minute), conditions: ready, want: SessionLive},
		{name: "Ready False", expiresAt: at(time.Minute), conditions: notReady, want: SessionNotReady},
		{name: "no Ready condition yet", expiresAt: at(time.Minute), want: SessionNotReady},
		{name: "no expiresAt: waits for approval", conditions: ready, want: SessionAwaitingApproval},
		{name: "expired at the instant of expiresAt", expiresAt: at(0), conditions: ready, want: SessionExpired, wantEnded: true},
		{name: "expired after expiresAt, not Ready", expiresAt: at(-time.Minute), conditions: notReady, want: SessionExpired, wantEnded: true},
		{name: "being deleted while Ready", deletion: at(-time.Second), expiresAt: at(time.Minute), conditions: ready, want: SessionDeleting, wantEnded: true},
		{name: "being deleted after expiry", deletion: at(0), expiresAt: at(-time.Minute), want: SessionDeleting, wantEnded: true},
		{name: "being deleted while awaiting approval", deletion: at(0), want: SessionDeleting, wantEnded: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{DeletionTimestamp: tc.deletion, CreationTimestamp: *at(-time.Hour)}
			versioned := &Session{ObjectMeta: meta, Spec: SessionSpec{IdleTimeout: tc.idleTimeout},
				Status: SessionStatus{ExpiresAt: tc.expiresAt, Conditions: tc.conditions, LastUsedAt: tc.lastUsedAt}}
			internal := &clustergate.Session{ObjectMeta: meta, Spec: clustergate.SessionSpec{IdleTimeout: tc.idleTimeout},
				Status: clustergate.SessionStatus{ExpiresAt: tc.expiresAt, Conditions: tc.conditions, LastUsedAt: tc.lastUsedAt}}
			if tc.approvedAt != nil {
				versioned.Status.Approvals = []SessionApproval{{Type: ApprovalOpen, Decision: ApprovalApproved, DecidedAt: tc.approvedAt}}
				internal.Status.Approvals = []clustergate.SessionApproval{{Type: clustergate.ApprovalOpen, Decision: clustergate.ApprovalApproved, DecidedAt: tc.approvedAt}}
			}
			if got := SessionStateAt(versioned, now); got != tc.want {
				t.Errorf("SessionStateAt = %s, want %s", got, tc.want)
			}
			if got := InternalSessionStateAt(internal, now); got != tc.want {
				t.Errorf("InternalSessionStateAt = %s, want %s", got, tc.want)
			}
			if got := tc.want.Ended(); got != tc.wantEnded {
				t.Errorf("%s.Ended() = %v, want %v", tc.want, got, tc.wantEnded)
			}
		})
	}
}
