// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// shopPolicy is what a session keeps of the policy: two approvers
// from shop-oncall, none of the owner's team.
func shopPolicy() *v1alpha1.AppliedApprovalPolicy {
	return &v1alpha1.AppliedApprovalPolicy{Name: "shop", Generation: 2, ApprovalRequired: true,
		Approvers: &v1alpha1.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}, ExcludeOwnerGroups: []string{"team-shop"}}}
}

func TestDescribeDecisions(t *testing.T) {
	expires := metav1.NewTime(time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC))
	approve := func(by, why string) v1alpha1.ApproverDecision {
		return v1alpha1.ApproverDecision{Approver: by, Decision: v1alpha1.ApprovalApproved, Reason: why}
	}
	tests := []struct {
		name     string
		approval v1alpha1.SessionApproval
		expires  *metav1.Time
		want     string
	}{
		{name: "waits for the first of two", approval: v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalPending, Required: 2},
			want: "opening waits for approval: 0 of 2 approved; no expiry yet"},
		{name: "1 of 2", approval: v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalPending, Required: 2,
			Decisions: []v1alpha1.ApproverDecision{approve("bob", "ok")}},
			want: "opening waits for approval: 1 of 2 approved (bob); no expiry yet"},
		{name: "2 of 2", approval: v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalApproved, Required: 2,
			DecidedBy: "carol", Reason: "INC-9", Decisions: []v1alpha1.ApproverDecision{approve("bob", "ok"), approve("carol", "INC-9")}},
			expires: &expires, want: `opening approved by carol ("INC-9"), approvers bob, carol; expires at 2026-12-03T16:00:00Z`},
		{name: "denied, and why", approval: v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalDenied, Required: 2,
			DecidedBy: "carol", Reason: "no incident", Decisions: []v1alpha1.ApproverDecision{approve("bob", "ok"),
				{Approver: "carol", Decision: v1alpha1.ApprovalDenied, Reason: "no incident"}}},
			want: `opening denied by carol ("no incident"); no expiry yet`},
		{name: "auto-approved", approval: v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalApproved, Required: 2,
			DecidedBy: "policy:shop", Reason: "auto-approved: the owner is in a group of [oncall] and the access window 1h0m0s is at most 1h0m0s"},
			expires: &expires, want: `opening approved by policy:shop ("auto-approved: the owner is in a group of [oncall] and the access window 1h0m0s is at most 1h0m0s"); expires at 2026-12-03T16:00:00Z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1alpha1.Session{Status: v1alpha1.SessionStatus{ExpiresAt: tt.expires, Approvals: []v1alpha1.SessionApproval{tt.approval}}}
			if got := describeLast(s); got != tt.want {
				t.Errorf("describeLast =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestMayApprove(t *testing.T) {
	users := shopPolicy()
	users.Approvers = &v1alpha1.SessionApprovers{Count: 1, Users: []string{"bob"}, Groups: []string{"sre"}}
	anyone := shopPolicy()
	anyone.Approvers = nil
	for _, tt := range []struct {
		name   string
		policy *v1alpha1.AppliedApprovalPolicy
		want   string
	}{
		{name: "flags", want: `holders of the verb "approve" on sessions`},
		{name: "a policy without approvers", policy: anyone, want: `holders of the verb "approve" on sessions (SessionApprovalPolicy "shop")`},
		{name: "groups and exclusions", policy: shopPolicy(),
			want: `the members of the groups ["shop-oncall"] who share none of the groups ["team-shop"] with the owner (SessionApprovalPolicy "shop")`},
		{name: "users and groups", policy: users, want: `the users ["bob"] and the members of the groups ["sre"] (SessionApprovalPolicy "shop")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayApprove(&v1alpha1.Session{Status: v1alpha1.SessionStatus{ApprovalPolicy: tt.policy}}); got != tt.want {
				t.Errorf("mayApprove = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestPolicyTest runs policy test against a fake API server that answers
// the dry-run create as clustergate does: it must be a dry run, and what
// the server decided is printed.
func TestPolicyTest(t *testing.T) {
	a := newFakeAPI(t)
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("POST /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("dryRun") != metav1.DryRunAll {
			http.Error(w, "policy test must not create a session", http.StatusBadRequest)
			return
		}
		s := &v1alpha1.Session{}
		body, err := io.ReadAll(r.Body)
		if err == nil {
			_, _, err = codecs.UniversalDeserializer().Decode(body, nil, s)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.TypeMeta = metav1.TypeMeta{Kind: "Session", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		switch s.Spec.AccessLevel.Group {
		case "admin":
			s.Status.ApprovalPolicy = shopPolicy()
			s.Status.Approvals = []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalPending, Policy: "shop", Required: 2}}
		case "viewer":
			s.Status.ApprovalPolicy = shopPolicy()
			s.Status.Approvals = []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalApproved, DecidedBy: "policy:shop",
				Reason: "auto-approved", Policy: "shop", Required: 2}}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s)
	})
	tests := []struct {
		access, want string
	}{
		{access: "admin", want: `policy: SessionApprovalPolicy "shop" (generation 2)
approval: required, by 2 distinct approver(s)
may approve: the members of the groups ["shop-oncall"] who share none of the groups ["team-shop"] with the owner (SessionApprovalPolicy "shop"); never the owner
`},
		{access: "viewer", want: `policy: SessionApprovalPolicy "shop" (generation 2)
approval: approved at once by policy:shop ("auto-approved")
`},
		{access: "debugger", want: `policy: none selects the session; the server's flags apply
approval: not required; the session opens at once
`},
	}
	for _, tt := range tests {
		t.Run(tt.access, func(t *testing.T) {
			out, errOut, err := a.runCommand(t, nil, "policy", "test", "shoot/prod", "--access", tt.access, "-n", "demo")
			if err != nil {
				t.Fatalf("policy test: %v (%s)", err, errOut)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitSaysDecisions: open --wait says what a session waits for and who
// may approve it, who approved it once it is Ready, and who denied it and
// why.
func TestWaitSaysDecisions(t *testing.T) {
	a := newFakeAPI(t)
	expires := metav1.NewTime(time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC))
	ready := []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	sessions := map[string]v1alpha1.SessionStatus{
		"waits": {ApprovalPolicy: shopPolicy(), Approvals: []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalPending,
			Policy: "shop", Required: 2, Decisions: []v1alpha1.ApproverDecision{{Approver: "bob", Decision: v1alpha1.ApprovalApproved}}}}},
		"auto": {ExpiresAt: &expires, Conditions: ready, Approvals: []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen,
			Decision: v1alpha1.ApprovalApproved, DecidedBy: "policy:shop-viewer", Reason: "auto-approved"}}},
		"denied": {Approvals: []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalDenied,
			DecidedBy: "carol", Reason: "no incident", Required: 2}}},
	}
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&v1alpha1.Session{TypeMeta: metav1.TypeMeta{Kind: "Session", APIVersion: v1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: r.PathValue("name"), Namespace: "demo"}, Status: sessions[r.PathValue("name")]})
	})
	tests := []struct {
		name, wantErrOut, wantErr string
	}{
		{name: "waits", wantErrOut: `session waits waits for approval, 1 of 2 approved (bob), by the members of the groups ["shop-oncall"] ` +
			`who share none of the groups ["team-shop"] with the owner (SessionApprovalPolicy "shop"): kubectl session approve waits -n demo` + "\n"},
		{name: "auto", wantErrOut: `session auto: opening approved by policy:shop-viewer ("auto-approved"); expires at 2026-12-03T16:00:00Z` + "\n"},
		{name: "denied", wantErr: `session denied: opening denied by carol ("no incident"); no expiry yet`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, _, errOut := genericiooptions.NewTestIOStreams()
			a.g.streams = streams
			_, err := a.g.waitReady(t.Context(), &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: "demo"}}, 5*time.Second, false)
			if (err == nil && tt.wantErr != "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("waitReady: %v, want %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("error output (-want +got):\n%s", diff)
			}
		})
	}
}
