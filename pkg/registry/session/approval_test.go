// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
)

var created = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func testStrategy(now time.Time) Strategy {
	policy := validation.DefaultSessionLimits()
	policy.ApprovalGroups = sets.New("admin")
	s := NewStrategy(runtime.NewScheme(), policy, false, "local")
	s.clock = clocktesting.NewFakePassiveClock(now)
	return s
}

func as(name string) context.Context {
	return genericapirequest.WithUser(genericapirequest.NewDefaultContext(), &user.DefaultInfo{Name: name})
}

// session is a session as stored: with the controller's finalizer and a
// label, which its subresources must leave alone.
func session(group string) *clustergate.Session {
	return &clustergate.Session{
		ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: "sre", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"team": "sre"}, Finalizers: []string{v1alpha1.SessionFinalizer}},
		Spec: clustergate.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: clustergate.SessionOwner{Username: "alice"},
			AccessLevel: clustergate.AccessLevel{Group: group}},
	}
}

func at(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// tamper makes a request to a subresource try what only the main resource
// may: strip the finalizer, add an owner reference that the garbage
// collector would act on, change labels and annotations. It returns the
// metadata the strategy must leave: the stored one, but for the managed
// fields, which the field manager wrote for this request.
func tamper(request *clustergate.Session) metav1.ObjectMeta {
	want := *request.ObjectMeta.DeepCopy()
	request.Finalizers = nil
	request.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "dangling"}}
	request.Labels = map[string]string{"team": "mallory"}
	request.Annotations = map[string]string{"note": "mallory was here"}
	request.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-session", Operation: metav1.ManagedFieldsOperationUpdate}}
	want.ManagedFields = request.ManagedFields
	return want
}

func TestPrepareForCreate(t *testing.T) {
	for _, tt := range []struct {
		group         string
		wantExpiresAt *metav1.Time
		wantApprovals []clustergate.SessionApproval
	}{
		{group: "viewer", wantExpiresAt: at(created.Add(time.Hour))},
		{group: "admin", wantApprovals: []clustergate.SessionApproval{{Type: clustergate.ApprovalOpen, RequestedBy: "carol",
			RequestedAt: metav1.NewTime(created), Decision: clustergate.ApprovalPending}}},
	} {
		t.Run(tt.group, func(t *testing.T) {
			s := session(tt.group)
			s.Status.ExpiresAt = at(created.Add(99 * time.Hour)) // a client's claim is dropped
			testStrategy(created).PrepareForCreate(as("carol"), s)
			if diff := cmp.Diff(tt.wantExpiresAt, s.Status.ExpiresAt); diff != "" {
				t.Errorf("expiresAt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantApprovals, s.Status.Approvals); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApprovalStrategy(t *testing.T) {
	now := created.Add(10*time.Minute + 500*time.Millisecond)
	decidedAt := at(created.Add(10 * time.Minute))
	open := clustergate.SessionApproval{Type: clustergate.ApprovalOpen, RequestedBy: "alice", RequestedAt: metav1.NewTime(created), Decision: clustergate.ApprovalPending}
	approvedOpen := open
	approvedOpen.Decision, approvedOpen.DecidedBy, approvedOpen.DecidedAt = clustergate.ApprovalApproved, "bob", at(created.Add(time.Minute))
	extend := clustergate.SessionApproval{Type: clustergate.ApprovalExtend, Duration: &metav1.Duration{Duration: 30 * time.Minute},
		RequestedBy: "alice", RequestedAt: metav1.NewTime(created.Add(5 * time.Minute)), Decision: clustergate.ApprovalPending}
	decide := func(a clustergate.SessionApproval, d clustergate.ApprovalDecision, by string) clustergate.SessionApproval {
		a.Decision, a.DecidedBy, a.Reason = d, by, "INC-1"
		return a
	}
	stamped := func(a clustergate.SessionApproval, d clustergate.ApprovalDecision) clustergate.SessionApproval {
		a.Decision, a.DecidedBy, a.DecidedAt, a.Reason = d, "bob", decidedAt, "INC-1"
		a.Decisions = []clustergate.ApproverDecision{{Approver: "bob", Decision: d, DecidedAt: *decidedAt, Reason: "INC-1"}}
		return a
	}
	tests := []struct {
		name          string
		old           clustergate.SessionStatus
		sent          []clustergate.SessionApproval
		wantExpiresAt *metav1.Time
		wantApprovals []clustergate.SessionApproval
	}{
		{name: "opening approved: the window starts now", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{open}},
			sent:          []clustergate.SessionApproval{decide(open, clustergate.ApprovalApproved, "mallory")},
			wantExpiresAt: at(created.Add(70 * time.Minute)),
			wantApprovals: []clustergate.SessionApproval{stamped(open, clustergate.ApprovalApproved)}},
		{name: "opening denied: no expiry", old: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{open}},
			sent:          []clustergate.SessionApproval{decide(open, clustergate.ApprovalDenied, "")},
			wantApprovals: []clustergate.SessionApproval{stamped(open, clustergate.ApprovalDenied)}},
		{name: "extension approved: later by its duration",
			old:           clustergate.SessionStatus{ExpiresAt: at(created.Add(61 * time.Minute)), Approvals: []clustergate.SessionApproval{approvedOpen, extend}},
			sent:          []clustergate.SessionApproval{approvedOpen, decide(extend, clustergate.ApprovalApproved, "")},
			wantExpiresAt: at(created.Add(91 * time.Minute)),
			wantApprovals: []clustergate.SessionApproval{approvedOpen, stamped(extend, clustergate.ApprovalApproved)}},
		{name: "extension denied: expiry kept",
			old:           clustergate.SessionStatus{ExpiresAt: at(created.Add(61 * time.Minute)), Approvals: []clustergate.SessionApproval{approvedOpen, extend}},
			sent:          []clustergate.SessionApproval{approvedOpen, decide(extend, clustergate.ApprovalDenied, "")},
			wantExpiresAt: at(created.Add(61 * time.Minute)),
			wantApprovals: []clustergate.SessionApproval{approvedOpen, stamped(extend, clustergate.ApprovalDenied)}},
		{name: "nothing pending: nothing stamped", old: clustergate.SessionStatus{ExpiresAt: at(created.Add(61 * time.Minute)),
			Approvals: []clustergate.SessionApproval{approvedOpen}},
			sent:          []clustergate.SessionApproval{decide(approvedOpen, clustergate.ApprovalDenied, "mallory")},
			wantExpiresAt: at(created.Add(61 * time.Minute)),
			wantApprovals: []clustergate.SessionApproval{decide(approvedOpen, clustergate.ApprovalDenied, "mallory")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := session("admin")
			old.Status = tt.old
			s := old.DeepCopy()
			wantMeta := tamper(s)
			s.Spec.TTL.Duration = 99 * time.Hour                 // ignored
			s.Status.ExpiresAt = at(created.Add(time.Hour * 99)) // ignored
			s.Status.Approvals = tt.sent
			NewApprovalStrategy(testStrategy(now)).PrepareForUpdate(as("bob"), s, old)
			if diff := cmp.Diff(wantMeta, s.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExpiresAt, s.Status.ExpiresAt); diff != "" {
				t.Errorf("expiresAt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantApprovals, s.Status.Approvals); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
			if s.Spec.TTL.Duration != time.Hour {
				t.Errorf("spec changed: %v", s.Spec)
			}
		})
	}
}

func TestExtensionStrategy(t *testing.T) {
	now := created.Add(30 * time.Minute)
	expiresAt := at(created.Add(time.Hour))
	approvedOpen := clustergate.SessionApproval{Type: clustergate.ApprovalOpen, RequestedBy: "alice", RequestedAt: metav1.NewTime(created),
		Decision: clustergate.ApprovalApproved, DecidedBy: "bob", DecidedAt: at(created)}
	tests := []struct {
		name          string
		group         string
		old           clustergate.SessionStatus
		sent          *metav1.Time
		wantExpiresAt *metav1.Time
		wantApprovals []clustergate.SessionApproval
	}{
		{name: "no approval needed: moved at once", group: "viewer", old: clustergate.SessionStatus{ExpiresAt: expiresAt},
			sent: at(created.Add(2*time.Hour + 300*time.Millisecond)), wantExpiresAt: at(created.Add(2 * time.Hour))},
		{name: "approval needed: waits", group: "admin",
			old:           clustergate.SessionStatus{ExpiresAt: expiresAt, Approvals: []clustergate.SessionApproval{approvedOpen}},
			sent:          at(created.Add(2 * time.Hour)),
			wantExpiresAt: expiresAt,
			wantApprovals: []clustergate.SessionApproval{approvedOpen, {Type: clustergate.ApprovalExtend, Duration: &metav1.Duration{Duration: time.Hour},
				RequestedBy: "carol", RequestedAt: metav1.NewTime(now), Decision: clustergate.ApprovalPending}}},
		{name: "earlier: passed on for validation to refuse", group: "viewer", old: clustergate.SessionStatus{ExpiresAt: expiresAt},
			sent: at(created.Add(time.Minute)), wantExpiresAt: at(created.Add(time.Minute))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := session(tt.group)
			old.Status = tt.old
			s := old.DeepCopy()
			wantMeta := tamper(s)
			s.Status.ExpiresAt = tt.sent
			s.Status.Approvals = nil // ignored
			NewExtensionStrategy(testStrategy(now)).PrepareForUpdate(as("carol"), s, old)
			if diff := cmp.Diff(wantMeta, s.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExpiresAt, s.Status.ExpiresAt); diff != "" {
				t.Errorf("expiresAt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantApprovals, s.Status.Approvals); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
		})
	}
}
