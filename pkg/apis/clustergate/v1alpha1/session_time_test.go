// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestSessionTimes: the access window starts at the opening's approval, or
// at creation; the idle deadline and what refusals say of it count from
// there or from the last use. The same for the versioned and the internal
// Session.
func TestSessionTimes(t *testing.T) {
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: created.Add(d)} }
	idle := &metav1.Duration{Duration: 10 * time.Minute}
	tests := []struct {
		name        string
		open        *clustergate.SessionApproval
		idleTimeout *metav1.Duration
		expiresAt   *metav1.Time
		lastUsedAt  *metav1.Time
		wantStart   time.Time
		wantIdle    time.Time
		wantSince   string
	}{
		{name: "no approval: from creation", idleTimeout: idle, expiresAt: at(time.Hour),
			wantStart: created, wantIdle: created.Add(10 * time.Minute), wantSince: "unused for 10m0s since 2026-11-30T12:00:00Z"},
		{name: "approved: from the approval", idleTimeout: idle, expiresAt: at(time.Hour),
			open:      &clustergate.SessionApproval{Type: clustergate.ApprovalOpen, Decision: clustergate.ApprovalApproved, DecidedAt: at(5 * time.Minute)},
			wantStart: created.Add(5 * time.Minute), wantIdle: created.Add(15 * time.Minute), wantSince: "unused for 10m0s since 2026-11-30T12:05:00Z"},
		{name: "used: from the last use", idleTimeout: idle, expiresAt: at(time.Hour), lastUsedAt: at(20 * time.Minute),
			wantStart: created, wantIdle: created.Add(30 * time.Minute), wantSince: "unused for 10m0s since 2026-11-30T12:20:00Z"},
		{name: "waits for approval: window not started, no idle deadline", idleTimeout: idle,
			open:      &clustergate.SessionApproval{Type: clustergate.ApprovalOpen, Decision: clustergate.ApprovalPending},
			wantStart: created, wantSince: "unused for longer than its idle timeout"},
		{name: "no idle timeout", expiresAt: at(time.Hour), wantStart: created, wantSince: "unused for longer than its idle timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}
			internal := &clustergate.Session{ObjectMeta: meta, Spec: clustergate.SessionSpec{IdleTimeout: tc.idleTimeout},
				Status: clustergate.SessionStatus{ExpiresAt: tc.expiresAt, LastUsedAt: tc.lastUsedAt}}
			if tc.open != nil {
				internal.Status.Approvals = []clustergate.SessionApproval{*tc.open}
			}
			versioned := &Session{}
			if err := Convert_clustergate_Session_To_v1alpha1_Session(internal, versioned, nil); err != nil {
				t.Fatal(err)
			}
			if got, got2 := WindowStart(versioned), InternalWindowStart(internal); !got.Equal(tc.wantStart) || !got2.Equal(tc.wantStart) {
				t.Errorf("WindowStart = %s, InternalWindowStart = %s, want %s", got, got2, tc.wantStart)
			}
			deadline, ok := IdleDeadline(versioned)
			deadline2, ok2 := InternalIdleDeadline(internal)
			if ok != !tc.wantIdle.IsZero() || ok2 != ok || !deadline.Equal(tc.wantIdle) || !deadline2.Equal(tc.wantIdle) {
				t.Errorf("IdleDeadline = %s %v, InternalIdleDeadline = %s %v, want %s", deadline, ok, deadline2, ok2, tc.wantIdle)
			}
			if got := InternalIdleSince(internal); got != tc.wantSince {
				t.Errorf("InternalIdleSince = %q, want %q", got, tc.wantSince)
			}
		})
	}
}

// TestExpiryAfter: expiries are kept at the second objects store.
func TestExpiryAfter(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		start time.Time
		ttl   time.Duration
		want  time.Time
	}{
		{name: "whole seconds", start: start, ttl: time.Hour, want: start.Add(time.Hour)},
		{name: "fraction of a second dropped", start: start.Add(700 * time.Millisecond), ttl: time.Hour + 500*time.Millisecond, want: start.Add(time.Hour + time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpiryAfter(tc.start, tc.ttl); !got.Equal(tc.want) {
				t.Errorf("ExpiryAfter = %s, want %s", got, tc.want)
			}
		})
	}
}
