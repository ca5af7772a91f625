// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// waitsForApproval is a session whose opening waits for approval.
func waitsForApproval(s *v1alpha1.Session) {
	s.Spec.AccessLevel.Group = "admin"
	s.Status.ExpiresAt = nil
	s.Status.Approvals = []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, RequestedBy: "alice",
		RequestedAt: metav1.NewTime(created), Decision: v1alpha1.ApprovalPending}}
}

// decided decides the session's last approval, by bob at created + 1m.
func decided(d v1alpha1.ApprovalDecision) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) {
		a := &s.Status.Approvals[len(s.Status.Approvals)-1]
		at := metav1.NewTime(created.Add(time.Minute))
		a.Decision, a.DecidedBy, a.DecidedAt, a.Reason = d, "bob", &at, "INC-1"
	}
}

// extensionAsked adds an extension by 30m that waits for approval.
func extensionAsked(s *v1alpha1.Session) {
	s.Status.Approvals = append(s.Status.Approvals, v1alpha1.SessionApproval{Type: v1alpha1.ApprovalExtend,
		Duration: &metav1.Duration{Duration: 30 * time.Minute}, RequestedBy: "alice", RequestedAt: metav1.NewTime(created), Decision: v1alpha1.ApprovalPending})
}

// certKubeconfig is a kubeconfig whose client certificate expires at notAfter.
func certKubeconfig(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("foo")}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: issue(t, key, "u", nil, notAfter), ClientKeyData: key}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestNextActionApproval(t *testing.T) {
	cfg := cfg
	cfg.ApprovalTimeout = 10 * time.Minute
	now := created.Add(time.Minute)
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	minted := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	waiting := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.SessionReasonWaitingForApproval, Message: "no credentials exist before the session is approved"}
	approved := func(reason string, status metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.SessionConditionApproved, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1}
	}
	pendingOpen := approved(v1alpha1.SessionReasonWaitingForApproval, metav1.ConditionUnknown,
		"the session asked for by alice: waits for a user with the verb approve on sessions")
	approvedOpen := approved(v1alpha1.SessionReasonApproved, metav1.ConditionTrue, "the session asked for by alice: approved by bob at 2026-11-30T10:01:00Z: INC-1")
	pendingExtension := approved(v1alpha1.SessionReasonExtensionWaitingForApproval, metav1.ConditionUnknown,
		"an extension by 30m0s asked for by alice: waits for a user with the verb approve on sessions")
	shortCreds := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: certKubeconfig(t, created.Add(30*time.Minute))})
	longCreds := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: certKubeconfig(t, created.Add(2*time.Hour))})
	tests := []struct {
		name   string
		obs    Observed
		expect Action
	}{
		{name: "waiting: the finalizer first",
			obs:    Observed{Session: session(waitsForApproval, func(s *v1alpha1.Session) { s.Finalizers = nil }), Policy: policy},
			expect: Action{Type: AddFinalizer}},
		{name: "waiting: no credentials, the conditions say so until the timeout",
			obs: Observed{Session: session(waitsForApproval), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 9 * time.Minute,
				Conditions: append(conditions(waiting, policyApplied, notReady(waiting)), pendingOpen)}},
		{name: "waiting: said so already",
			obs: Observed{Session: session(waitsForApproval, func(s *v1alpha1.Session) {
				s.Status.Conditions = append(conditions(waiting, policyApplied, notReady(waiting)), pendingOpen)
				s.Status.ObservedGeneration = 1
			}), Policy: policy},
			expect: Action{Type: None, RequeueAfter: 9 * time.Minute}},
		{name: "waiting under a policy: how many and who approved so far",
			obs: Observed{Session: session(waitsForApproval, func(s *v1alpha1.Session) {
				a := &s.Status.Approvals[0]
				a.Policy, a.Required = "shop-admin", 2
				a.Decisions = []v1alpha1.ApproverDecision{{Approver: "bob", Decision: v1alpha1.ApprovalApproved}}
			}), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 9 * time.Minute,
				Conditions: append(conditions(waiting, policyApplied, notReady(waiting)), approved(v1alpha1.SessionReasonWaitingForApproval, metav1.ConditionUnknown,
					`the session asked for by alice: waits for 2 distinct approvers under SessionApprovalPolicy "shop-admin"; approved so far by bob`))}},
		{name: "waited too long: removed",
			obs:    Observed{Session: session(waitsForApproval), Policy: policy, Now: created.Add(10 * time.Minute)},
			expect: Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonApprovalTimedOut, Message: "Session not approved within 10m0s; removed"}},
		{name: "denied: removed, finalizer or not",
			obs: Observed{Session: session(waitsForApproval, decided(v1alpha1.ApprovalDenied), func(s *v1alpha1.Session) { s.Finalizers = nil }), Policy: policy},
			expect: Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonDenied,
				Message: "Session denied by bob at 2026-11-30T10:01:00Z: INC-1"}},
		{name: "approved: credentials are minted",
			obs:    Observed{Session: session(waitsForApproval, decided(v1alpha1.ApprovalApproved), withExpiry(61*time.Minute)), Policy: policy},
			expect: Action{Type: CreatePrivateKey}},
		{name: "approved and minted: Ready, with who approved",
			obs: Observed{Session: session(waitsForApproval, decided(v1alpha1.ApprovalApproved), withExpiry(61*time.Minute)), Credentials: minted, Policy: policy},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: time.Hour,
				Conditions: append(conditions(credsMinted, policyApplied, sessionReady), approvedOpen)}},
		{name: "an extension waits: still Ready",
			obs: Observed{Session: session(waitsForApproval, decided(v1alpha1.ApprovalApproved), withExpiry(61*time.Minute), extensionAsked),
				Credentials: minted, Policy: policy},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: time.Hour,
				Conditions: append(conditions(credsMinted, policyApplied, sessionReady), pendingExtension)}},
		{name: "extended past the credentials: renewed before they expire",
			obs:    Observed{Session: session(withExpiry(time.Hour)), Credentials: shortCreds, Policy: policy},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 27 * time.Minute, Conditions: conditions(credsMinted, policyApplied, sessionReady)}},
		{name: "renewal due",
			obs:    Observed{Session: session(withExpiry(time.Hour)), Credentials: shortCreds, Policy: policy, Now: created.Add(28 * time.Minute)},
			expect: Action{Type: CreatePrivateKey}},
		{name: "renewal: Gardener failed: still Ready, saying so, tried again later",
			obs: Observed{Session: session(withExpiry(time.Hour)), Credentials: shortCreds, Policy: policy, Now: created.Add(28 * time.Minute),
				Target:          &TargetProblem{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "down"},
				GardenerFailure: &controllerutil.Failure{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "down", Count: 1, At: created.Add(28 * time.Minute)}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: time.Second, Conditions: func() []metav1.Condition {
				c := credsMinted
				c.Message += "; renewing the client certificate before it expires at 2026-11-30T10:30:00Z: down"
				return conditions(c, policyApplied, sessionReady)
			}()}},
		{name: "credentials outlast the session: no renewal",
			obs:    Observed{Session: session(withExpiry(time.Hour)), Credentials: longCreds, Policy: policy},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 59 * time.Minute, Conditions: conditions(credsMinted, policyApplied, sessionReady)}},
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

// withExpiry sets expiresAt to created + d.
func withExpiry(d time.Duration) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) {
		at := metav1.NewTime(created.Add(d))
		s.Status.ExpiresAt = &at
	}
}
