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

// TestNextActionLocked: a session a lock holds says Locked on its Ready
// condition, with the event, and keeps its credentials; a pass comes back
// when the lock expires; once no lock holds it, Ready again with the
// Unlocked event.
func TestNextActionLocked(t *testing.T) {
	now := created.Add(30 * time.Minute)
	minted := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	ready := func(s *v1alpha1.Session) {
		s.Status.BackendURL, s.Status.ObservedGeneration = "https://127.0.0.1:6443", 1
		s.Status.Conditions = conditions(credsMinted, policyApplied, sessionReady)
	}
	msg := "locked by SessionLock inc: INC-1"
	locked := metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonLocked, Message: msg}
	marked := func(s *v1alpha1.Session) { s.Status.Conditions = conditions(credsMinted, policyApplied, locked) }
	untilExpiry := 30 * time.Minute

	tests := []struct {
		name   string
		obs    Observed
		expect Action
	}{
		{name: "a lock holds it: Ready False, reason Locked, with the event",
			obs: Observed{Session: session(ready), Credentials: minted, Policy: policy, Lock: &Lock{Name: "inc", Reason: "INC-1"}},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, BackendURL: "https://127.0.0.1:6443",
				Conditions: conditions(credsMinted, policyApplied, locked), Reason: v1alpha1.SessionReasonLocked, Message: "Session " + msg, EventAction: "Lock"}},
		{name: "marked Locked: nothing, credentials kept, back when the lock expires",
			obs: Observed{Session: session(ready, marked), Credentials: minted, Policy: policy,
				Lock: &Lock{Name: "inc", Reason: "INC-1", ExpiresAt: now.Add(5 * time.Minute)}},
			expect: Action{Type: None, RequeueAfter: 5 * time.Minute}},
		{name: "no lock any more: Ready again, with the event",
			obs: Observed{Session: session(ready, marked), Credentials: minted, Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, BackendURL: "https://127.0.0.1:6443",
				Conditions: conditions(credsMinted, policyApplied, sessionReady), Reason: v1alpha1.SessionReasonUnlocked,
				Message: "Session no longer locked: " + msg, EventAction: "Unlock"}},
		{name: "locked and expired: deleted as expired",
			obs: Observed{Session: session(ready, marked), Credentials: minted, Policy: policy, Lock: &Lock{Name: "inc", Reason: "INC-1"},
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
			state := v1alpha1.SessionStateAt(tt.obs.Session, tt.obs.Now)
			if marked := tt.obs.Session.Status.Conditions[2].Reason == v1alpha1.SessionReasonLocked; marked && tt.obs.Now.Equal(now) && state != v1alpha1.SessionLocked {
				t.Errorf("state of a session marked Locked = %s, want Locked", state)
			}
		})
	}
}
