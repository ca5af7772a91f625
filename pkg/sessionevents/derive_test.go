// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func ptr[T any](v T) *T { return &v }

// session is alice's 1h admin session on shoot/prod, created at t0, as
// changed by each of edits.
func session(edits ...func(*v1alpha1.Session)) *v1alpha1.Session {
	s := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "fix", UID: "u1", CreationTimestamp: at(0)},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: v1alpha1.SessionOwner{Username: "alice", Groups: []string{"sre"}},
			AccessLevel: v1alpha1.AccessLevel{Group: "admin"}, Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "prod"}}, Reason: "INC-1"},
		Status: v1alpha1.SessionStatus{BackendURL: "https://api.prod.example.com"},
	}
	for _, e := range edits {
		e(s)
	}
	return s
}

func expiresAt(d time.Duration) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) { s.Status.ExpiresAt = ptr(at(d)) }
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string, d time.Duration) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) {
		s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: at(d)})
	}
}

func ready(d time.Duration) func(*v1alpha1.Session) {
	return condition(v1alpha1.SessionConditionReady, metav1.ConditionTrue, "SessionReady", "ready", d)
}

func deleted(d time.Duration) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) { s.DeletionTimestamp = ptr(at(d)) }
}

// open is a pending opening under policy two-of-oncall, decided by each
// of decisions (approver, decision) a minute apart; settled once two
// approved or one denied.
func open(decisions ...string) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) {
		s.Status.ApprovalPolicy = &v1alpha1.AppliedApprovalPolicy{Name: "two-of-oncall", ApprovalRequired: true,
			Approvers: &v1alpha1.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}}}
		a := v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, RequestedBy: "alice", RequestedAt: at(0), Decision: v1alpha1.ApprovalPending,
			Policy: "two-of-oncall", Required: 2}
		for i := 0; i+1 < len(decisions); i += 2 {
			d := v1alpha1.ApproverDecision{Approver: decisions[i], Decision: v1alpha1.ApprovalDecision(decisions[i+1]), DecidedAt: at(time.Duration(i/2+1) * time.Minute), Reason: "ok " + decisions[i]}
			a.Decisions = append(a.Decisions, d)
			if d.Decision == v1alpha1.ApprovalDenied || len(a.Approvers()) == 2 {
				a.Decision, a.DecidedBy, a.DecidedAt, a.Reason = d.Decision, d.Approver, &d.DecidedAt, d.Reason
			}
		}
		s.Status.Approvals = append(s.Status.Approvals, a)
	}
}

func autoApproved(s *v1alpha1.Session) {
	s.Status.ApprovalPolicy = &v1alpha1.AppliedApprovalPolicy{Name: "oncall-viewer", ApprovalRequired: true}
	s.Status.Approvals = append(s.Status.Approvals, v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, RequestedBy: "alice", RequestedAt: at(0),
		Decision: v1alpha1.ApprovalApproved, DecidedBy: "policy:oncall-viewer", DecidedAt: ptr(at(0)), Reason: "auto-approved", Policy: "oncall-viewer"})
}

func locked(d time.Duration) func(*v1alpha1.Session) {
	return condition(v1alpha1.SessionConditionReady, metav1.ConditionFalse, v1alpha1.SessionReasonLocked, v1alpha1.LockMessage("freeze", "INC-2"), d)
}

func TestDerive(t *testing.T) {
	now := t0.Add(30 * time.Minute)
	tests := []struct {
		name    string
		session *v1alpha1.Session
		history []string
		want    []string // type step and id suffix after the UID
	}{
		{name: "created without approval", session: session(expiresAt(time.Hour)), want: []string{"requested.0"}},
		{name: "ready", session: session(expiresAt(time.Hour), ready(time.Second)), want: []string{"requested.0", "opened"}},
		{name: "waits for two approvers", session: session(open()), want: []string{"requested.0"}},
		{name: "one of two approved", session: session(open("bob", "Approved")), history: []string{"requested.0"}, want: []string{"approved.0.0"}},
		{name: "two approved and ready", session: session(open("bob", "Approved", "carol", "Approved"), expiresAt(time.Hour+2*time.Minute), ready(3*time.Minute)),
			history: []string{"requested.0", "approved.0.0"}, want: []string{"approved.0.1", "opened"}},
		{name: "denied and removed", session: session(open("bob", "Denied"), deleted(time.Minute)),
			want: []string{"requested.0", "denied.0.0", "ended"}},
		{name: "auto-approved", session: session(autoApproved, expiresAt(time.Hour), ready(time.Second)),
			want: []string{"requested.0", "auto_approved.0", "opened"}},
		{name: "approval timed out", session: session(open(), deleted(10*time.Minute)), history: []string{"requested.0"}, want: []string{"ended"}},
		{name: "revoked", session: session(expiresAt(time.Hour), ready(time.Second), deleted(5*time.Minute)),
			history: []string{"requested.0", "opened"}, want: []string{"revoked", "ended"}},
		{name: "expired", session: session(expiresAt(time.Hour), ready(time.Second), deleted(time.Hour)),
			history: []string{"requested.0", "opened"}, want: []string{"ended"}},
		{name: "locked", session: session(expiresAt(time.Hour), locked(time.Minute)), history: []string{"requested.0", "opened"}, want: []string{"locked.0"}},
		{name: "locked again stays one event", session: session(expiresAt(time.Hour), locked(time.Minute)), history: []string{"requested.0", "opened", "locked.0"}},
		{name: "unlocked", session: session(expiresAt(time.Hour), ready(2*time.Minute)), history: []string{"requested.0", "opened", "locked.0"}, want: []string{"unlocked.0"}},
		{name: "locked a second time", session: session(expiresAt(time.Hour), locked(3*time.Minute)),
			history: []string{"requested.0", "opened", "locked.0", "unlocked.0"}, want: []string{"locked.1"}},
		{name: "idle", session: session(expiresAt(time.Hour),
			condition(v1alpha1.SessionConditionReady, metav1.ConditionFalse, v1alpha1.SessionReasonIdle, "unused", 20*time.Minute),
			condition(v1alpha1.SessionConditionCredentialsReady, metav1.ConditionFalse, v1alpha1.SessionReasonIdle, "unused", 20*time.Minute)),
			history: []string{"requested.0"}, want: []string{"idle"}},
		{name: "extended without approval", session: session(expiresAt(2*time.Hour), ready(time.Second)), history: []string{"requested.0", "opened"},
			want: []string{"extended.at" + jsonUnix(t0.Add(2*time.Hour))}},
		{name: "everything derived before makes nothing", session: session(open("bob", "Approved", "carol", "Approved"), expiresAt(time.Hour), ready(time.Second), deleted(2*time.Minute)),
			history: []string{"requested.0", "approved.0.0", "approved.0.1", "opened", "revoked", "ended"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := History{}
			for _, id := range tt.history {
				h[string(tt.session.UID)+"."+id] = true
			}
			var got []string
			for _, e := range Derive(tt.session, h, 10*time.Minute, now) {
				got = append(got, strings.TrimPrefix(e.ID, string(tt.session.UID)+"."))
				if !strings.HasSuffix(string(e.Type), "."+strings.Split(got[len(got)-1], ".")[0]) {
					t.Errorf("event %s has type %s", e.ID, e.Type)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func jsonUnix(t time.Time) string {
	b, _ := json.Marshal(t.Unix())
	return string(b)
}

// TestDeriveData checks what the events say: the request with the command
// that approves it, each approver's decision with the count so far, the
// auto-approval's policy, the end's reason; and that no event carries what
// the session's status holds beyond its decisions and times.
func TestDeriveData(t *testing.T) {
	s := session(open("bob", "Approved", "carol", "Approved"), expiresAt(time.Hour+2*time.Minute), ready(3*time.Minute), deleted(4*time.Minute),
		func(s *v1alpha1.Session) { s.Status.DeletedBy = "dave" })
	events := Derive(s, History{}, 10*time.Minute, t0)
	byID := map[string]Event{}
	for _, e := range events {
		byID[strings.TrimPrefix(e.ID, "u1.")] = e
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "api.prod.example.com") {
			t.Errorf("event %s carries the backend URL: %s", e.ID, raw)
		}
	}
	req := byID["requested.0"].Data.Request
	if req == nil || req.ApproveCommand != "kubectl session approve -n shop fix" || !req.ApprovalRequired || req.Required != 2 ||
		req.MayApprove == nil || !cmp.Equal(req.MayApprove.Groups, []string{"shop-oncall"}) {
		t.Errorf("request: %+v", req)
	}
	if m := byID["requested.0"].Data.Message; !strings.Contains(m, "kubectl session approve -n shop fix") || !strings.Contains(m, "INC-1") {
		t.Errorf("request message: %s", m)
	}
	second := byID["approved.0.1"]
	if d := second.Data.Decision; d == nil || d.By != "carol" || d.Reason != "ok carol" || !d.At.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("carol's decision: %+v", d)
	}
	if got := second.Data.Request.Approvers; !cmp.Equal(got, []string{"bob", "carol"}) {
		t.Errorf("approvers at carol's decision: %v", got)
	}
	if !strings.Contains(second.Data.Message, "(2 of 2)") {
		t.Errorf("carol's message: %s", second.Data.Message)
	}
	for _, step := range []string{"revoked", "ended"} {
		if e := byID[step]; e.Data.End == nil || e.Data.End.Reason != EndRevoked || e.Data.End.RevokedBy != "dave" ||
			!strings.Contains(e.Data.Message, " by dave") || !e.Time.Equal(t0.Add(4*time.Minute)) {
			t.Errorf("%s: %+v", step, e)
		}
	}
	auto := Derive(session(autoApproved), History{}, 0, t0)
	if d := auto[1].Data.Decision; auto[1].Type != AutoApproved || d.Policy != "oncall-viewer" || auto[0].Data.Request.ApprovalRequired {
		t.Errorf("auto-approval: %+v %+v", auto[0].Data.Request, d)
	}
	for i := 1; i < len(events); i++ {
		if Less(events[i], events[i-1]) {
			t.Errorf("event %s comes before %s", events[i].ID, events[i-1].ID)
		}
	}
}

func TestCloudEvent(t *testing.T) {
	e := Derive(session(expiresAt(time.Hour)), History{}, 0, t0)[0]
	ce, err := e.CloudEvent("https://garden.example.com/clustergate")
	if err != nil {
		t.Fatal(err)
	}
	if ce.ID() != "u1.requested.0" || ce.Type() != string(Requested) || ce.Subject() != "namespaces/shop/sessions/fix" || !ce.Time().Equal(t0) {
		t.Errorf("CloudEvent: %s", ce)
	}
	var d Data
	if err := ce.DataAs(&d); err != nil || d.Owner != "alice" || d.Target != (TargetRef{Kind: "shoot", Name: "prod"}) {
		t.Errorf("data: %+v, %v", d, err)
	}
}

// TestRecordingFailedEvent: one event per stream, named by the stream,
// with the session's data from the cache or, once it is gone, from the
// recording; what became of the stream is said, the store's error is not.
func TestRecordingFailedEvent(t *testing.T) {
	info := v1alpha1.RecordingInfo{Stream: "20260301T100500Z-replica-2-0a1b", Replica: "replica-2", Way: "data-plane",
		RecordedSession: v1alpha1.RecordedSession{Namespace: "shop", Name: "fix", UID: "u1", Owner: "alice"}}
	tests := []struct {
		name        string
		session     *v1alpha1.Session
		outcome     RecordingOutcome
		wantTarget  TargetRef
		wantMessage string
	}{
		{name: "ended under required", session: session(expiresAt(time.Hour)), outcome: StreamEnded,
			wantTarget: TargetRef{Kind: "shoot", Name: "prod"}, wantMessage: "the stream was closed (--recording=required)"},
		{name: "refused under required", session: session(expiresAt(time.Hour)), outcome: StreamRefused,
			wantTarget: TargetRef{Kind: "shoot", Name: "prod"}, wantMessage: "the stream was refused"},
		{name: "best-effort, session no longer cached", session: SessionOfRecording(info.RecordedSession), outcome: StreamUnrecorded,
			wantMessage: "runs unrecorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := RecordingFailedEvent(tt.session, RecordingFailure{Info: info, Outcome: tt.outcome, At: t0.Add(5 * time.Minute)})
			want := &Recording{Stream: info.Stream, Replica: "replica-2", Way: "data-plane", Outcome: tt.outcome}
			if e.ID != "u1.recording_failed."+info.Stream || e.Type != RecordingFailed || !e.Time.Equal(t0.Add(5*time.Minute)) {
				t.Errorf("event %s of type %s at %s", e.ID, e.Type, e.Time)
			}
			if diff := cmp.Diff(want, e.Data.Recording); diff != "" {
				t.Errorf("recording (-want +got):\n%s", diff)
			}
			if e.Data.Owner != "alice" || e.Data.Target != tt.wantTarget || !strings.Contains(e.Data.Message, tt.wantMessage) {
				t.Errorf("data: %+v", e.Data)
			}
		})
	}
}
