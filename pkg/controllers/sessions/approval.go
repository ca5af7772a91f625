// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// approvalAction returns what a session's opening approval asks for: its
// removal once denied or timed out (Reason says which), a wait with the
// conditions saying so while pending, or nil once approved or when the
// session needs no approval.
func approvalAction(o Observed, cfg Config) *Action {
	s := o.Session
	if len(s.Status.Approvals) == 0 || s.Status.Approvals[0].Type != v1alpha1.ApprovalOpen {
		return nil
	}
	switch open := s.Status.Approvals[0]; open.Decision {
	case v1alpha1.ApprovalDenied:
		return &Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonDenied, Message: "Session " + decision(open)}
	case v1alpha1.ApprovalPending:
		deadline := v1alpha1.ApprovalDeadline(s.CreationTimestamp, cfg.ApprovalTimeout)
		if !o.Now.Before(deadline) {
			return &Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonApprovalTimedOut,
				Message: fmt.Sprintf("Session not approved within %s; removed", cfg.ApprovalTimeout)}
		}
		waiting := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.SessionReasonWaitingForApproval, Message: "no credentials exist before the session is approved"}
		a := statusOr(o, waiting, "", policyCondition(o.Policy), deadline.Sub(o.Now))
		return &a
	}
	return nil
}

// approvedCondition is the Approved condition of a session that needs
// approval: the decision on its last request, with who, when and why.
func approvedCondition(s *v1alpha1.Session) *metav1.Condition {
	n := len(s.Status.Approvals)
	if n == 0 {
		return nil
	}
	a := s.Status.Approvals[n-1]
	c := &metav1.Condition{Type: v1alpha1.SessionConditionApproved}
	extend := a.Type == v1alpha1.ApprovalExtend
	switch a.Decision {
	case v1alpha1.ApprovalApproved:
		c.Status, c.Reason = metav1.ConditionTrue, pick(extend, v1alpha1.SessionReasonExtensionApproved, v1alpha1.SessionReasonApproved)
	case v1alpha1.ApprovalDenied:
		c.Status, c.Reason = metav1.ConditionFalse, pick(extend, v1alpha1.SessionReasonExtensionDenied, v1alpha1.SessionReasonDenied)
	default:
		c.Status, c.Reason = metav1.ConditionUnknown, pick(extend, v1alpha1.SessionReasonExtensionWaitingForApproval, v1alpha1.SessionReasonWaitingForApproval)
	}
	what := "the session"
	if extend && a.Duration != nil {
		what = fmt.Sprintf("an extension by %s", a.Duration.Duration)
	}
	c.Message = fmt.Sprintf("%s asked for by %s: %s", what, a.RequestedBy, decision(a))
	return c
}

// decision says who decided, when and why, or that nobody has yet.
func decision(a v1alpha1.SessionApproval) string {
	if a.Decision == v1alpha1.ApprovalPending || a.DecidedAt == nil {
		if a.Policy == "" {
			return "waits for a user with the verb approve on sessions"
		}
		out := fmt.Sprintf("waits for %d distinct approvers under SessionApprovalPolicy %q", a.RequiredApprovers(), a.Policy)
		if names := a.Approvers(); len(names) > 0 {
			out += fmt.Sprintf("; approved so far by %s", strings.Join(names, ", "))
		}
		return out
	}
	out := fmt.Sprintf("%s by %s at %s", map[v1alpha1.ApprovalDecision]string{v1alpha1.ApprovalApproved: "approved", v1alpha1.ApprovalDenied: "denied"}[a.Decision],
		a.DecidedBy, a.DecidedAt.UTC().Format(time.RFC3339))
	if a.Reason != "" {
		out += ": " + a.Reason
	}
	return out
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// recordApproval records an event when a status write changes the
// Approved condition: a request waits, or was approved or denied, by whom,
// when and why.
func (c *Controller) recordApproval(s *v1alpha1.Session, written []metav1.Condition) {
	now := meta.FindStatusCondition(written, v1alpha1.SessionConditionApproved)
	if now == nil {
		return
	}
	if was := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionApproved); was != nil && was.Reason == now.Reason && was.Message == now.Message {
		return
	}
	c.recorder.Eventf(s, nil, corev1.EventTypeNormal, now.Reason, "Approve", "%s%s", now.Message, forReason(s))
}

// forReason adds the session's justification to an event's message.
func forReason(s *v1alpha1.Session) string {
	if s.Spec.Reason == "" {
		return ""
	}
	return " (reason: " + s.Spec.Reason + ")"
}
