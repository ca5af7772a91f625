// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// TestNextActionIdle: a session unused for its idle timeout ends like an
// expired one, but stays until its expiry: first its conditions say Idle
// (with the event), then its credentials go; until then a pass comes back
// at the idle deadline.
func TestNextActionIdle(t *testing.T) {
	now := created.Add(30 * time.Minute)
	minted := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	ready := func(s *v1alpha1.Session) {
		s.Status.BackendURL, s.Status.ObservedGeneration = "https://127.0.0.1:6443", 1
		s.Status.Conditions = conditions(credsMinted, policyApplied, sessionReady)
	}
	idleFor := func(timeout time.Duration, lastUsed time.Time) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) {
			s.Spec.IdleTimeout = &metav1.Duration{Duration: timeout}
			if !lastUsed.IsZero() {
				s.Status.LastUsedAt = &metav1.Time{Time: lastUsed}
			}
		}
	}
	msg := "no proxied request or open stream from 2026-11-30T10:20:00Z to its idle deadline 2026-11-30T10:30:00Z (idle timeout 10m0s); its credentials were removed"
	idle := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonIdle, Message: msg}
	marked := func(s *v1alpha1.Session) { s.Status.Conditions = conditions(idle, policyApplied, notReady(idle)) }
	untilExpiry := 30 * time.Minute

	tests := []struct {
		name   string
		obs    Observed
		expect Action
	}{
		{name: "used within its idle timeout: back at the idle deadline",
			obs:    Observed{Session: session(ready, idleFor(10*time.Minute, now.Add(-4*time.Minute))), Credentials: minted, Policy: policy},
			expect: Action{Type: None, RequeueAfter: 6 * time.Minute}},
		{name: "no idle timeout: back at expiry",
			obs:    Observed{Session: session(ready), Credentials: minted, Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "never used: the deadline counts from creation",
			obs:    Observed{Session: session(ready, idleFor(40*time.Minute, time.Time{})), Credentials: minted, Policy: policy},
			expect: Action{Type: None, RequeueAfter: 10 * time.Minute}},
		{name: "idle deadline reached: Ready False, reason Idle, with the event",
			obs: Observed{Session: session(ready, idleFor(10*time.Minute, now.Add(-10*time.Minute))), Credentials: minted, Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, BackendURL: "https://127.0.0.1:6443",
				Conditions: conditions(idle, policyApplied, notReady(idle)), Reason: v1alpha1.SessionReasonIdle, Message: "Session ended: " + msg}},
		{name: "marked Idle: the credentials go",
			obs:    Observed{Session: session(ready, idleFor(10*time.Minute, now.Add(-10*time.Minute)), marked), Credentials: minted, Policy: policy},
			expect: Action{Type: DeleteCredentials}},
		{name: "marked Idle, credentials gone: nothing until expiry, no new credentials",
			obs: Observed{Session: session(ready, idleFor(10*time.Minute, now.Add(-10*time.Minute)), marked,
				func(s *v1alpha1.Session) { s.Status.BackendURL = "https://127.0.0.1:6443" }), Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "marked Idle and a use recorded late: still idle, its message kept",
			obs: Observed{Session: session(ready, idleFor(10*time.Minute, now), marked, func(s *v1alpha1.Session) {
				s.Status.BackendURL = "https://127.0.0.1:6443"
			}), Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "idle and expired: deleted as expired",
			obs: Observed{Session: session(ready, idleFor(10*time.Minute, now.Add(-10*time.Minute)), marked), Policy: policy,
				Now: created.Add(time.Hour)},
			expect: Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonExpired, Message: "Session expired at 2026-11-30T11:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.obs.Now.IsZero() {
				tt.obs.Now = now
			}
			if diff := cmp.Diff(tt.expect, NextAction(withLevel(tt.obs), cfg)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}
