// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func pendingOpen() clustergate.SessionApproval {
	return clustergate.SessionApproval{Type: clustergate.ApprovalOpen, RequestedBy: "alice", RequestedAt: metav1.NewTime(created),
		Decision: clustergate.ApprovalPending}
}

func pendingExtend(d time.Duration) clustergate.SessionApproval {
	return clustergate.SessionApproval{Type: clustergate.ApprovalExtend, Duration: &metav1.Duration{Duration: d}, RequestedBy: "alice",
		RequestedAt: metav1.NewTime(created.Add(time.Hour)), Decision: clustergate.ApprovalPending}
}

// decided is a as the approval strategy settles it with bob's decision d.
func decided(a clustergate.SessionApproval, d clustergate.ApprovalDecision) clustergate.SessionApproval {
	a = withDecision(a, "bob", d)
	a.Decision, a.DecidedBy, a.DecidedAt = d, "bob", ptrTime(created.Add(time.Minute))
	return a
}

// withDecision is a with approver's decision d recorded, as the approval
// strategy records it.
func withDecision(a clustergate.SessionApproval, approver string, d clustergate.ApprovalDecision) clustergate.SessionApproval {
	a.Decisions = append(a.Decisions[:len(a.Decisions):len(a.Decisions)],
		clustergate.ApproverDecision{Approver: approver, Decision: d, DecidedAt: metav1.NewTime(created.Add(time.Minute))})
	return a
}

// twoApprovers is a pending opening under a policy that needs two approvers.
func twoApprovers() clustergate.SessionApproval {
	a := pendingOpen()
	a.Policy, a.Required = "shop-admin", 2
	return a
}

func TestValidateSessionApprovalUpdate(t *testing.T) {
	policy := DefaultSessionLimits() // approval timeout 1h
	approvedAt := created.Add(time.Minute)
	opened := decided(pendingOpen(), clustergate.ApprovalApproved)
	tests := []struct {
		name       string
		old        clustergate.SessionStatus
		approvals  []clustergate.SessionApproval
		deleted    bool
		now        time.Time
		want       []string
		wantReason string
	}{
		{name: "opening approved", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{decided(pendingOpen(), clustergate.ApprovalApproved)}},
		{name: "opening denied with a reason", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{func() clustergate.SessionApproval {
				a := decided(pendingOpen(), clustergate.ApprovalDenied)
				a.Reason = "no incident open"
				return a
			}()}},
		{name: "extension approved", old: clustergate.SessionStatus{ExpiresAt: ptrTime(approvedAt.Add(time.Hour)),
			Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Hour)}},
			approvals: []clustergate.SessionApproval{opened, decided(pendingExtend(time.Hour), clustergate.ApprovalApproved)}},
		{name: "first of two approvers: still pending", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{twoApprovers()}},
			approvals: []clustergate.SessionApproval{withDecision(twoApprovers(), "bob", clustergate.ApprovalApproved)}},
		{name: "second of two approvers", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{withDecision(twoApprovers(), "bob", clustergate.ApprovalApproved)}},
			approvals: []clustergate.SessionApproval{decided(withDecision(twoApprovers(), "bob", clustergate.ApprovalApproved), clustergate.ApprovalApproved)}},
		{name: "a denial left pending", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{twoApprovers()}},
			approvals: []clustergate.SessionApproval{withDecision(twoApprovers(), "bob", clustergate.ApprovalDenied)},
			want:      []string{"FieldValueInvalid status.approvals[0].decisions[0].decision"}},
		{name: "required count changed", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{twoApprovers()}},
			approvals: []clustergate.SessionApproval{func() clustergate.SessionApproval {
				a := decided(twoApprovers(), clustergate.ApprovalApproved)
				a.Required = 1
				return a
			}()}, want: []string{"FieldValueForbidden status.approvals[0]"}},
		{name: "earlier approver's decision rewritten", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{withDecision(twoApprovers(), "bob", clustergate.ApprovalApproved)}},
			approvals: []clustergate.SessionApproval{decided(withDecision(twoApprovers(), "carol", clustergate.ApprovalApproved), clustergate.ApprovalApproved)},
			want:      []string{"FieldValueNotSupported status.approvals[0].decision"}},

		{name: "nothing pending", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{opened}},
			approvals: []clustergate.SessionApproval{opened}, want: []string{"FieldValueForbidden status.approvals"}},
		{name: "no approvals at all", want: []string{"FieldValueForbidden status.approvals"}},
		{name: "decision left pending", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{pendingOpen()}, want: []string{"FieldValueNotSupported status.approvals[0].decision"}},
		{name: "unknown decision", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{decided(pendingOpen(), "Maybe")}, want: []string{"FieldValueNotSupported status.approvals[0].decision"}},
		{name: "entry removed", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			want: []string{"FieldValueInvalid status.approvals"}},
		{name: "request changed", old: clustergate.SessionStatus{ExpiresAt: ptrTime(approvedAt.Add(time.Hour)),
			Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Hour)}},
			approvals: []clustergate.SessionApproval{opened, decided(pendingExtend(5*time.Hour), clustergate.ApprovalApproved)},
			want:      []string{"FieldValueForbidden status.approvals[1]"}},
		{name: "earlier decision changed", old: clustergate.SessionStatus{ExpiresAt: ptrTime(approvedAt.Add(time.Hour)),
			Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Hour)}},
			approvals: []clustergate.SessionApproval{decided(pendingOpen(), clustergate.ApprovalDenied), decided(pendingExtend(time.Hour), clustergate.ApprovalApproved)},
			want:      []string{"FieldValueForbidden status.approvals"}},
		{name: "reason too long", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{func() clustergate.SessionApproval {
				a := decided(pendingOpen(), clustergate.ApprovalApproved)
				a.Reason = strings.Repeat("r", MaxReasonLength+1)
				return a
			}()}, want: []string{"FieldValueTooLong status.approvals[0].reason"}},
		{name: "opening timed out", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{decided(pendingOpen(), clustergate.ApprovalApproved)},
			now:       created.Add(time.Hour), want: []string{"FieldValueForbidden status.approvals"}, wantReason: "--session-approval-timeout"},
		{name: "extension of an expired session", old: clustergate.SessionStatus{ExpiresAt: ptrTime(approvedAt.Add(time.Hour)),
			Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Hour)}},
			approvals: []clustergate.SessionApproval{opened, decided(pendingExtend(time.Hour), clustergate.ApprovalApproved)},
			now:       approvedAt.Add(time.Hour), want: []string{"FieldValueForbidden status.approvals"}, wantReason: "expired"},
		{name: "session being deleted", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			approvals: []clustergate.SessionApproval{decided(pendingOpen(), clustergate.ApprovalApproved)}, deleted: true,
			want: []string{"FieldValueForbidden status.approvals"}, wantReason: "being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validSession()
			old.ResourceVersion = "1"
			old.Status = tt.old
			if tt.deleted {
				old.DeletionTimestamp = ptrTime(created.Add(time.Minute))
			}
			s := old.DeepCopy()
			s.Status.Approvals = tt.approvals
			now := tt.now
			if now.IsZero() {
				now = created.Add(time.Minute)
			}
			errs := ValidateSessionApprovalUpdate(s, old, policy, now)
			if diff := cmp.Diff(tt.want, errorPaths(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tt.wantReason != "" && !strings.Contains(errs.ToAggregate().Error(), tt.wantReason) {
				t.Errorf("errors %v do not say %q", errs, tt.wantReason)
			}
		})
	}
}

func TestValidateSessionExtensionUpdate(t *testing.T) {
	policy := DefaultSessionLimits()
	policy.MaxLifetime = 3 * time.Hour
	expiresAt := created.Add(time.Hour)
	approvedAt := created.Add(30 * time.Minute)
	opened := decided(pendingOpen(), clustergate.ApprovalApproved)
	opened.DecidedAt = ptrTime(approvedAt)
	tests := []struct {
		name       string
		old        clustergate.SessionStatus
		new        clustergate.SessionStatus
		now        time.Time
		want       []string
		wantReason string
	}{
		{name: "moved later", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt.Add(time.Hour))}},
		{name: "moved to the lifetime cap", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(created.Add(3 * time.Hour))}},
		{name: "waits for approval", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened}},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Hour)}}},
		{name: "cap counted from the approval", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened}},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened, pendingExtend(2*time.Hour + 30*time.Minute)}}},

		{name: "beyond the lifetime cap", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new:  clustergate.SessionStatus{ExpiresAt: ptrTime(created.Add(3*time.Hour + time.Second))},
			want: []string{"FieldValueInvalid status.expiresAt"}, wantReason: "--session-max-lifetime"},
		{name: "approved extension beyond the cap", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened}},
			new:  clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt), Approvals: []clustergate.SessionApproval{opened, pendingExtend(2*time.Hour + 31*time.Minute)}},
			want: []string{"FieldValueInvalid status.expiresAt"}},
		{name: "moved earlier", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new:  clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt.Add(-time.Minute))},
			want: []string{"FieldValueInvalid status.expiresAt"}, wantReason: "never moves it earlier"},
		{name: "not moved", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new:  clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			want: []string{"FieldValueInvalid status.expiresAt"}},
		{name: "removed", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			want: []string{"FieldValueInvalid status.expiresAt"}},
		{name: "opening not approved yet", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			new:  clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			want: []string{"FieldValueForbidden status.expiresAt"}, wantReason: "waits for approval"},
		{name: "an extension already pending", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt),
			Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Minute)}},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt),
				Approvals: []clustergate.SessionApproval{opened, pendingExtend(time.Minute), pendingExtend(time.Minute)}},
			want: []string{"FieldValueForbidden status.approvals"}},
		{name: "expired", old: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt)},
			new: clustergate.SessionStatus{ExpiresAt: ptrTime(expiresAt.Add(time.Hour))}, now: expiresAt,
			want: []string{"FieldValueForbidden status.expiresAt"}, wantReason: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validSession()
			old.ResourceVersion = "1"
			old.Status = tt.old
			s := old.DeepCopy()
			s.Status = tt.new
			now := tt.now
			if now.IsZero() {
				now = created.Add(45 * time.Minute)
			}
			errs := ValidateSessionExtensionUpdate(s, old, policy, now)
			if diff := cmp.Diff(tt.want, errorPaths(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tt.wantReason != "" && !strings.Contains(errs.ToAggregate().Error(), tt.wantReason) {
				t.Errorf("errors %v do not say %q", errs, tt.wantReason)
			}
		})
	}
}
