// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
)

// History is what the outbox already holds of one session: the ids of its
// events. Locks come and go, so the index of the next locked or unlocked
// event is counted from it.
type History map[string]bool

// count is how many events of type t the history holds.
func (h History) count(t Type) int {
	n := 0
	suffix := "." + step(t) + "."
	for id := range h {
		if strings.Contains(id, suffix) {
			n++
		}
	}
	return n
}

// step is the part of an id that names the type: "approved".
func step(t Type) string { return strings.TrimPrefix(string(t), "dev.clustergate.session.") }

// id is the id of a session's step: "<uid>.<step>[.<index>...]".
func id(s *v1alpha1.Session, t Type, index ...int) string {
	out := string(s.UID) + "." + step(t)
	for _, i := range index {
		out += fmt.Sprintf(".%d", i)
	}
	return out
}

// Derive returns the events of a session's steps that its object shows and
// the history does not hold, oldest first. approvalTimeout is the server's
// --session-approval-timeout, which tells a session removed for want of an
// approver from a revoked one. now is when an extension that leaves no
// request behind was seen, the only step whose time the session does not
// keep.
func Derive(s *v1alpha1.Session, h History, approvalTimeout time.Duration, now time.Time) []Event {
	var out []Event
	add := func(e Event) {
		if !h[e.ID] {
			out = append(out, e)
		}
	}
	base := dataOf(s)
	with := func(t Type, at time.Time, msg string, index ...int) Event {
		d := base
		d.Message = msg
		return Event{ID: id(s, t, index...), Type: t, Time: at.UTC(), Data: d}
	}
	who := fmt.Sprintf("%s/%s", s.Namespace, s.Name)

	if len(s.Status.Approvals) == 0 {
		e := with(Requested, s.CreationTimestamp.Time, fmt.Sprintf("%s opened session %s: %s%s", s.Spec.Owner.Username, who, describe(s), justification(s)), 0)
		e.Data.Request = &Request{Type: string(v1alpha1.ApprovalOpen), RequestedBy: s.Spec.Owner.Username, RequestedAt: s.CreationTimestamp.UTC()}
		add(e)
	}
	for i := range s.Status.Approvals {
		for _, e := range requestEvents(s, i, with, who) {
			add(e)
		}
	}
	if extendedWithoutApproval(s) {
		e := with(Extended, now.Truncate(time.Second), fmt.Sprintf("session %s extended: %s", who, expiry(s)))
		e.ID = id(s, Extended) + fmt.Sprintf(".at%d", s.Status.ExpiresAt.Unix())
		add(e)
	}

	ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
	creds := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionCredentialsReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue:
		e := with(Opened, ready.LastTransitionTime.Time, fmt.Sprintf("session %s is open: %s", who, expiry(s)))
		e.Data.Condition = ready.Message
		add(e)
	case creds != nil && creds.Status == metav1.ConditionTrue:
		// Locked after it was Ready: its credentials stay.
		e := with(Opened, creds.LastTransitionTime.Time, fmt.Sprintf("session %s is open: %s", who, expiry(s)))
		add(e)
	}
	if ready != nil && ready.Reason == v1alpha1.SessionReasonIdle {
		e := with(Idle, ready.LastTransitionTime.Time, fmt.Sprintf("session %s ended unused: %s", who, ready.Message))
		e.Data.Condition = ready.Message
		add(e)
	}
	locked, unlocked := h.count(Locked), h.count(Unlocked)
	switch isLocked := ready != nil && ready.Reason == v1alpha1.SessionReasonLocked; {
	case isLocked && locked == unlocked:
		e := with(Locked, ready.LastTransitionTime.Time, fmt.Sprintf("session %s %s", who, ready.Message), locked)
		e.Data.Condition = ready.Message
		add(e)
	case !isLocked && locked > unlocked && s.DeletionTimestamp == nil:
		at := s.CreationTimestamp.Time
		if ready != nil {
			at = ready.LastTransitionTime.Time
		}
		e := with(Unlocked, at, fmt.Sprintf("session %s no longer locked", who), unlocked)
		if ready != nil {
			e.Data.Condition = ready.Message
		}
		add(e)
	}

	if s.DeletionTimestamp != nil {
		reason := EndReason(s, approvalTimeout)
		at := s.DeletionTimestamp.Time
		end := &End{Reason: reason}
		if reason == EndRevoked {
			end.RevokedBy = s.Status.DeletedBy
			e := with(Revoked, at, fmt.Sprintf("session %s revoked before its expiry%s", who, by(end.RevokedBy)))
			e.Data.End = end
			add(e)
		}
		e := with(Ended, at, fmt.Sprintf("session %s ended: %s%s", who, reason, by(end.RevokedBy)))
		e.Data.End = end
		add(e)
	}
	sort.SliceStable(out, func(i, j int) bool { return Less(out[i], out[j]) })
	return out
}

// Less orders events by time, then by their place in a session's life,
// then by id.
func Less(a, b Event) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if ra, rb := Rank(a.Type), Rank(b.Type); ra != rb {
		return ra < rb
	}
	return a.ID < b.ID
}

// requestEvents are the events of the request status.approvals[i]: its
// asking, each decision on it and, for an approved extension, the
// extension.
func requestEvents(s *v1alpha1.Session, i int, with func(Type, time.Time, string, ...int) Event, who string) []Event {
	a := &s.Status.Approvals[i]
	what := "opening of session " + who
	if a.Type == v1alpha1.ApprovalExtend && a.Duration != nil {
		what = fmt.Sprintf("extension of session %s by %s", who, a.Duration.Duration)
	}
	req := requestOf(s, i)
	auto := strings.HasPrefix(a.DecidedBy, approvalpolicy.AutoApprover) && len(a.Decisions) == 0
	msg := fmt.Sprintf("%s asks for the %s: %s%s", a.RequestedBy, what, describe(s), justification(s))
	if !auto {
		req.ApprovalRequired = true
		req.ApproveCommand = fmt.Sprintf("kubectl session approve -n %s %s", s.Namespace, s.Name)
		req.DenyCommand = fmt.Sprintf("kubectl session deny -n %s %s", s.Namespace, s.Name)
		msg += fmt.Sprintf("; needs %d approval(s) by %s: %s", a.RequiredApprovers(), mayApproveText(s), req.ApproveCommand)
	}
	asked := with(Requested, a.RequestedAt.Time, msg, i)
	asked.Data.Request = req
	out := []Event{asked}

	if auto && a.DecidedAt != nil {
		policy := strings.TrimPrefix(a.DecidedBy, approvalpolicy.AutoApprover)
		e := with(AutoApproved, a.DecidedAt.Time, fmt.Sprintf("the %s was approved by SessionApprovalPolicy %q: %s", what, policy, a.Reason), i)
		e.Data.Request = req
		e.Data.Decision = &Decision{By: a.DecidedBy, At: a.DecidedAt.UTC(), Reason: a.Reason, Policy: policy}
		out = append(out, e)
	}
	approved := 0
	for j, d := range a.Decisions {
		t, verb := Approved, "approved"
		if d.Decision == v1alpha1.ApprovalDenied {
			t, verb = Denied, "denied"
		} else {
			approved++
		}
		msg := fmt.Sprintf("%s %s the %s", d.Approver, verb, what)
		if t == Approved {
			msg += fmt.Sprintf(" (%d of %d)", approved, a.RequiredApprovers())
		}
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
		e := with(t, d.DecidedAt.Time, msg, i, j)
		r := *req
		r.Approvers = approversUpTo(a, j)
		e.Data.Request = &r
		e.Data.Decision = &Decision{By: d.Approver, At: d.DecidedAt.UTC(), Reason: d.Reason}
		out = append(out, e)
	}
	if a.Type == v1alpha1.ApprovalExtend && a.Decision == v1alpha1.ApprovalApproved && a.DecidedAt != nil {
		e := with(Extended, a.DecidedAt.Time, fmt.Sprintf("session %s extended by %s: %s", who, durationOf(a), expiry(s)), i)
		e.Data.Request = req
		e.Data.Decision = &Decision{By: a.DecidedBy, At: a.DecidedAt.UTC(), Reason: a.Reason}
		out = append(out, e)
	}
	return out
}

// requestOf is status.approvals[i] as event data, without the commands.
func requestOf(s *v1alpha1.Session, i int) *Request {
	a := &s.Status.Approvals[i]
	r := &Request{Index: i, Type: string(a.Type), RequestedBy: a.RequestedBy, RequestedAt: a.RequestedAt.UTC(),
		Required: a.RequiredApprovers(), Approvers: a.Approvers(), Policy: a.Policy}
	if a.Duration != nil {
		r.Duration = a.Duration.Duration.String()
	}
	if p := s.Status.ApprovalPolicy; p != nil && p.Approvers != nil && (len(p.Approvers.Users) > 0 || len(p.Approvers.Groups) > 0) {
		r.MayApprove = &MayApprove{Users: p.Approvers.Users, Groups: p.Approvers.Groups, ExcludeOwnerGroups: p.Approvers.ExcludeOwnerGroups}
	}
	return r
}

// approversUpTo are the distinct users who approved a request up to its
// decision j.
func approversUpTo(a *v1alpha1.SessionApproval, j int) []string {
	upTo := *a
	upTo.Decisions = a.Decisions[:j+1]
	return upTo.Approvers()
}

// mayApproveText says who may decide: the approvers of the session's
// policy, or any holder of the verb approve.
func mayApproveText(s *v1alpha1.Session) string {
	if p := s.Status.ApprovalPolicy; p != nil && p.Approvers != nil {
		return approvalpolicy.Who(p.Approvers.Users, p.Approvers.Groups)
	}
	return approvalpolicy.Who(nil, nil) + " on sessions in namespace " + s.Namespace
}

// extendedWithoutApproval tells whether the expiry of a session that waits
// for no approval moved past where its TTL put it: such an extension
// leaves no request behind, only the later expiry. Its event's id holds the
// new expiry, so that each extension has its own.
func extendedWithoutApproval(s *v1alpha1.Session) bool {
	if len(s.Status.Approvals) > 0 || s.Status.ExpiresAt == nil {
		return false
	}
	return s.Status.ExpiresAt.After(v1alpha1.ExpiryAfter(v1alpha1.WindowStart(s), s.Spec.TTL.Duration))
}

// EndReason is why a deleted session ended: denied, not approved in time,
// expired (idle sessions stay until their expiry), or revoked before its
// expiry by a user.
func EndReason(s *v1alpha1.Session, approvalTimeout time.Duration) string {
	if s.DeletionTimestamp == nil {
		return ""
	}
	deleted := s.DeletionTimestamp.Time
	if len(s.Status.Approvals) > 0 && s.Status.Approvals[0].Type == v1alpha1.ApprovalOpen {
		switch open := s.Status.Approvals[0]; {
		case open.Decision == v1alpha1.ApprovalDenied:
			return EndDenied
		case open.Decision == v1alpha1.ApprovalPending && approvalTimeout > 0 &&
			!deleted.Before(v1alpha1.ApprovalDeadline(s.CreationTimestamp, approvalTimeout).Truncate(time.Second)):
			return EndApprovalTimedOut
		}
	}
	if s.Status.ExpiresAt != nil && !deleted.Before(s.Status.ExpiresAt.Time) {
		if ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); ready != nil && ready.Reason == v1alpha1.SessionReasonIdle {
			return EndIdle
		}
		return EndExpired
	}
	return EndRevoked
}

// dataOf is what every event of the session carries.
func dataOf(s *v1alpha1.Session) Data {
	d := Data{
		Session:     SessionRef{Namespace: s.Namespace, Name: s.Name, UID: s.UID},
		Owner:       s.Spec.Owner.Username,
		AccessLevel: s.Spec.AccessLevel.Group,
		TTL:         s.Spec.TTL.Duration.String(),
		// The justification is the requester's own text, no credential.
		Justification: s.Spec.Reason,
	}
	switch t := s.Spec.Target; {
	case t.Shoot != nil:
		d.Target = TargetRef{Kind: "shoot", Name: t.Shoot.Name}
	case t.Cluster != nil:
		d.Target = TargetRef{Kind: "cluster", Name: t.Cluster.KubeconfigSecretRef.Name}
	}
	if s.Spec.Scope != nil {
		d.Namespaces = s.Spec.Scope.Namespaces
	}
	if s.Status.ExpiresAt != nil {
		at := s.Status.ExpiresAt.UTC()
		d.ExpiresAt = &at
	}
	return d
}

// describe says what a session reaches: "admin on shoot/prod for 1h".
func describe(s *v1alpha1.Session) string {
	d := dataOf(s)
	out := fmt.Sprintf("%s on %s/%s", d.AccessLevel, d.Target.Kind, d.Target.Name)
	if len(d.Namespaces) > 0 {
		out += " in namespaces " + strings.Join(d.Namespaces, ",")
	}
	return out + " for " + d.TTL
}

// by names who did it: " by bob", or nothing when unknown.
func by(user string) string {
	if user == "" {
		return ""
	}
	return " by " + user
}

func justification(s *v1alpha1.Session) string {
	if s.Spec.Reason == "" {
		return ""
	}
	return " (reason: " + s.Spec.Reason + ")"
}

func expiry(s *v1alpha1.Session) string {
	if s.Status.ExpiresAt == nil {
		return "no expiry yet"
	}
	return "expires at " + s.Status.ExpiresAt.UTC().Format(time.RFC3339)
}

func durationOf(a *v1alpha1.SessionApproval) string {
	if a.Duration == nil {
		return "?"
	}
	return a.Duration.Duration.String()
}
