// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// shopPolicy is the policy: two approvers from shop-oncall, and
// oncall members' sessions approved without a human up to 1h.
func shopPolicy() *clustergate.SessionApprovalPolicy {
	return &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 3},
		Spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true,
			Approvers:   &clustergate.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}},
			AutoApprove: &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}}}}
}

func TestPrepareForCreateUnderPolicy(t *testing.T) {
	notRequired := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "open"}}
	pending := func(policy string, required int32) []clustergate.SessionApproval {
		return []clustergate.SessionApproval{{Type: clustergate.ApprovalOpen, RequestedBy: "carol", RequestedAt: metav1.NewTime(created),
			Decision: clustergate.ApprovalPending, Policy: policy, Required: required}}
	}
	tests := []struct {
		name          string
		policy        *clustergate.SessionApprovalPolicy
		group         string
		ttl           time.Duration
		ownerGroups   []string
		wantExpiresAt *metav1.Time
		wantApprovals []clustergate.SessionApproval
		wantAuto      bool
	}{
		{name: "no policy: the flags, admin waits", group: "admin", ttl: time.Hour, wantApprovals: pending("", 0)},
		{name: "no policy: the flags, viewer opens", group: "viewer", ttl: time.Hour, wantExpiresAt: at(created.Add(time.Hour))},
		{name: "a policy that needs no approval overrides the flags", policy: notRequired, group: "admin", ttl: time.Hour,
			wantExpiresAt: at(created.Add(time.Hour))},
		{name: "two approvers", policy: shopPolicy(), group: "viewer", ttl: time.Hour, ownerGroups: []string{"dev"},
			wantApprovals: pending("shop", 2)},
		{name: "auto-approved up to its TTL", policy: shopPolicy(), group: "viewer", ttl: time.Hour, ownerGroups: []string{"dev", "oncall"},
			wantExpiresAt: at(created.Add(time.Hour)), wantAuto: true,
			wantApprovals: []clustergate.SessionApproval{{Type: clustergate.ApprovalOpen, RequestedBy: "carol", RequestedAt: metav1.NewTime(created),
				Decision: clustergate.ApprovalApproved, DecidedBy: "policy:shop", DecidedAt: at(created), Policy: "shop", Required: 2,
				Reason: `auto-approved: the owner is in a group of [oncall] and the access window 1h0m0s is at most 1h0m0s`}}},
		{name: "beyond its auto-approval TTL: two approvers", policy: shopPolicy(), group: "viewer", ttl: 2 * time.Hour, ownerGroups: []string{"oncall"},
			wantAuto: true, wantApprovals: pending("shop", 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(tt.group)
			s.Spec.TTL.Duration, s.Spec.Owner.Groups = tt.ttl, tt.ownerGroups
			ctx := as("carol")
			if tt.policy != nil {
				ctx = WithApprovalPolicy(ctx, tt.policy)
			}
			testStrategy(created).PrepareForCreate(ctx, s)
			if diff := cmp.Diff(tt.wantExpiresAt, s.Status.ExpiresAt); diff != "" {
				t.Errorf("expiresAt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantApprovals, s.Status.Approvals); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
			switch applied := s.Status.ApprovalPolicy; {
			case tt.policy == nil && applied != nil:
				t.Errorf("status.approvalPolicy = %+v without a policy", applied)
			case tt.policy != nil && (applied == nil || applied.Name != tt.policy.Name || applied.Generation != tt.policy.Generation ||
				(applied.AutoApprove != nil) != tt.wantAuto):
				t.Errorf("status.approvalPolicy = %+v, want %q generation %d with auto-approval %v", applied, tt.policy.Name, tt.policy.Generation, tt.wantAuto)
			}
		})
	}
}

// TestApprovalUnderPolicy walks the request: bob approves and it
// still waits, carol approves and it opens; a denial ends another.
func TestApprovalUnderPolicy(t *testing.T) {
	waiting := session("admin")
	waiting.ResourceVersion = "1"
	ctx := WithApprovalPolicy(as("alice"), shopPolicy())
	testStrategy(created).PrepareForCreate(ctx, waiting)
	decide := func(old *clustergate.Session, by string, d clustergate.ApprovalDecision, at time.Time) *clustergate.Session {
		t.Helper()
		s := old.DeepCopy()
		s.Status.Approvals[0].Decision, s.Status.Approvals[0].Reason = d, by+"'s reason"
		st := NewApprovalStrategy(testStrategy(at))
		st.PrepareForUpdate(as(by), s, old)
		if errs := st.ValidateUpdate(as(by), s, old); len(errs) > 0 {
			t.Fatalf("%s's decision refused: %v", by, errs)
		}
		return s
	}
	byBob := decide(waiting, "bob", clustergate.ApprovalApproved, created.Add(time.Minute))
	if a := byBob.Status.Approvals[0]; a.Decision != clustergate.ApprovalPending || a.DecidedBy != "" || a.Reason != "" || byBob.Status.ExpiresAt != nil {
		t.Fatalf("after 1 of 2 approvals: %+v, expiresAt %v; want still pending, no expiry", a, byBob.Status.ExpiresAt)
	}
	byCarol := decide(byBob, "carol", clustergate.ApprovalApproved, created.Add(2*time.Minute))
	want := clustergate.SessionApproval{Type: clustergate.ApprovalOpen, RequestedBy: "alice", RequestedAt: metav1.NewTime(created),
		Decision: clustergate.ApprovalApproved, DecidedBy: "carol", DecidedAt: at(created.Add(2 * time.Minute)), Reason: "carol's reason",
		Policy: "shop", Required: 2, Decisions: []clustergate.ApproverDecision{
			{Approver: "bob", Decision: clustergate.ApprovalApproved, DecidedAt: metav1.NewTime(created.Add(time.Minute)), Reason: "bob's reason"},
			{Approver: "carol", Decision: clustergate.ApprovalApproved, DecidedAt: metav1.NewTime(created.Add(2 * time.Minute)), Reason: "carol's reason"}}}
	if diff := cmp.Diff(want, byCarol.Status.Approvals[0]); diff != "" {
		t.Errorf("after 2 of 2 approvals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(at(created.Add(62*time.Minute)), byCarol.Status.ExpiresAt); diff != "" {
		t.Errorf("expiresAt (-want +got):\n%s", diff)
	}

	denied := decide(byBob, "dave", clustergate.ApprovalDenied, created.Add(3*time.Minute))
	if a := denied.Status.Approvals[0]; a.Decision != clustergate.ApprovalDenied || a.DecidedBy != "dave" || len(a.Decisions) != 2 || denied.Status.ExpiresAt != nil {
		t.Errorf("after bob's approval and dave's denial: %+v, expiresAt %v; want denied by dave, both decisions kept", a, denied.Status.ExpiresAt)
	}
}

// TestExtensionUnderPolicy: an extension goes through the policy the
// session keeps, auto-approved while the window stays within its TTL.
func TestExtensionUnderPolicy(t *testing.T) {
	opened := session("viewer")
	opened.ResourceVersion = "1"
	opened.Spec.TTL.Duration, opened.Spec.Owner.Groups = 30*time.Minute, []string{"oncall"}
	testStrategy(created).PrepareForCreate(WithApprovalPolicy(as("alice"), shopPolicy()), opened)
	now := created.Add(10 * time.Minute)
	tests := []struct {
		name     string
		to       time.Time
		wantAuto bool
	}{
		{name: "within the auto-approval TTL", to: created.Add(time.Hour), wantAuto: true},
		{name: "beyond it: two approvers", to: created.Add(90 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := opened.DeepCopy()
			s.Status.ExpiresAt = at(tt.to)
			st := NewExtensionStrategy(testStrategy(now))
			st.PrepareForUpdate(as("alice"), s, opened)
			if errs := st.ValidateUpdate(as("alice"), s, opened); len(errs) > 0 {
				t.Fatalf("extension refused: %v", errs)
			}
			ext := s.Status.Approvals[len(s.Status.Approvals)-1]
			if ext.Type != clustergate.ApprovalExtend || ext.Policy != "shop" || ext.Required != 2 {
				t.Fatalf("extension %+v, want an Extend request under policy shop needing 2", ext)
			}
			wantExpiry, wantDecision, wantBy := opened.Status.ExpiresAt, clustergate.ApprovalPending, ""
			if tt.wantAuto {
				wantExpiry, wantDecision, wantBy = at(tt.to), clustergate.ApprovalApproved, "policy:shop"
			}
			if ext.Decision != wantDecision || ext.DecidedBy != wantBy || !s.Status.ExpiresAt.Equal(wantExpiry) {
				t.Errorf("extension %s by %q, expiry %v; want %s by %q, expiry %v", ext.Decision, ext.DecidedBy, s.Status.ExpiresAt, wantDecision, wantBy, wantExpiry)
			}
		})
	}
}
