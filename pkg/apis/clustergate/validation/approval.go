// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// ValidateSessionApprovalUpdate validates a decision through the approval
// subresource, as the strategy prepared it: the last approval, which was
// pending, is now Approved or Denied, and nothing else of it or of the
// earlier ones changed. A session that expired, or whose opening waited
// longer than the policy's approval timeout, can no longer be decided on.
func ValidateSessionApprovalUpdate(newSession, oldSession *clustergate.Session, policy SessionLimits, now time.Time) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSession.ObjectMeta, &oldSession.ObjectMeta, field.NewPath("metadata"))
	approvalsPath := field.NewPath("status", "approvals")
	pending := oldSession.Status.PendingApproval()
	if pending == nil {
		return append(allErrs, field.Forbidden(approvalsPath, "nothing about this session waits for approval"))
	}
	if err := decidable(oldSession, pending, policy, now); err != "" {
		return append(allErrs, field.Forbidden(approvalsPath, err))
	}
	approvals, oldApprovals := newSession.Status.Approvals, oldSession.Status.Approvals
	if len(approvals) != len(oldApprovals) {
		return append(allErrs, field.Invalid(approvalsPath, len(approvals),
			fmt.Sprintf("must keep its %d entries and decide the last one", len(oldApprovals))))
	}
	last := len(approvals) - 1
	if !apiequality.Semantic.DeepEqual(approvals[:last], oldApprovals[:last]) {
		allErrs = append(allErrs, field.Forbidden(approvalsPath, "only the last entry, the pending one, may change"))
	}
	lastPath := approvalsPath.Index(last)
	decided, asked := approvals[last], oldApprovals[last]
	if decided.Type != asked.Type || !apiequality.Semantic.DeepEqual(decided.Duration, asked.Duration) ||
		decided.RequestedBy != asked.RequestedBy || !decided.RequestedAt.Equal(&asked.RequestedAt) ||
		decided.Policy != asked.Policy || decided.Required != asked.Required {
		allErrs = append(allErrs, field.Forbidden(lastPath, "what was asked for may not change, only its decision"))
	}
	// The strategy records the decision as one more of the request's
	// decisions; an approval short of the required count leaves it pending.
	decisionsPath, n := lastPath.Child("decisions"), len(asked.Decisions)
	switch {
	case len(decided.Decisions) != n+1 || !apiequality.Semantic.DeepEqual(decided.Decisions[:n], asked.Decisions) ||
		(decided.Decisions[n].Decision != clustergate.ApprovalApproved && decided.Decisions[n].Decision != clustergate.ApprovalDenied):
		allErrs = append(allErrs, field.NotSupported(lastPath.Child("decision"), decided.Decision,
			[]clustergate.ApprovalDecision{clustergate.ApprovalApproved, clustergate.ApprovalDenied}))
	case decided.Decision != decided.Decisions[n].Decision &&
		(decided.Decision != clustergate.ApprovalPending || decided.Decisions[n].Decision != clustergate.ApprovalApproved):
		allErrs = append(allErrs, field.Invalid(decisionsPath.Index(n).Child("decision"), decided.Decisions[n].Decision,
			fmt.Sprintf("does not settle the request as %s", decided.Decision)))
	}
	if n < len(decided.Decisions) {
		allErrs = append(allErrs, validateReason(decided.Decisions[n].Reason, decisionsPath.Index(n).Child("reason"))...)
	}
	return append(allErrs, validateReason(decided.Reason, lastPath.Child("reason"))...)
}

// decidable says why a pending approval can no longer be decided, or "".
func decidable(s *clustergate.Session, pending *clustergate.SessionApproval, policy SessionLimits, now time.Time) string {
	switch state := v1alpha1.InternalSessionStateAt(s, now); {
	case state == v1alpha1.SessionDeleting:
		return "the session is being deleted"
	case state == v1alpha1.SessionExpired:
		return fmt.Sprintf("the session expired at %s", formatTime(s.Status.ExpiresAt.Time))
	case state == v1alpha1.SessionIdle:
		return wentIdle(s)
	case pending.Type == clustergate.ApprovalOpen && !now.Before(v1alpha1.ApprovalDeadline(s.CreationTimestamp, policy.ApprovalTimeout)):
		return fmt.Sprintf("the session waited for approval longer than %s (--session-approval-timeout) and is being removed", policy.ApprovalTimeout)
	}
	return ""
}

// ValidateSessionExtensionUpdate validates an extension through the
// extension subresource, as the strategy prepared it: either expiresAt moved
// later, or, for a session that needs approval, an Extend approval was
// added. Either way the new expiry lies within the policy's lifetime cap.
func ValidateSessionExtensionUpdate(newSession, oldSession *clustergate.Session, policy SessionLimits, now time.Time) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSession.ObjectMeta, &oldSession.ObjectMeta, field.NewPath("metadata"))
	expiresPath := field.NewPath("status", "expiresAt")
	approvalsPath := field.NewPath("status", "approvals")
	current := oldSession.Status.ExpiresAt
	switch state := v1alpha1.InternalSessionStateAt(oldSession, now); {
	case state == v1alpha1.SessionDeleting:
		return append(allErrs, field.Forbidden(expiresPath, "the session is being deleted"))
	case state == v1alpha1.SessionAwaitingApproval:
		return append(allErrs, field.Forbidden(expiresPath, "the session waits for approval; it can be extended once approved"))
	case state == v1alpha1.SessionExpired:
		return append(allErrs, field.Forbidden(expiresPath, fmt.Sprintf("the session expired at %s", formatTime(current.Time))))
	case state == v1alpha1.SessionIdle:
		return append(allErrs, field.Forbidden(expiresPath, wentIdle(oldSession)))
	case oldSession.Status.PendingApproval() != nil:
		return append(allErrs, field.Forbidden(approvalsPath, "an earlier extension waits for approval"))
	}

	var requested *time.Time
	if e := newSession.Status.ExpiresAt; e != nil {
		requested = &e.Time
	}
	if n := len(newSession.Status.Approvals); n > len(oldSession.Status.Approvals) {
		if n > maxApprovals {
			return append(allErrs, field.TooMany(approvalsPath, n, maxApprovals))
		}
		if ext := newSession.Status.Approvals[n-1]; ext.Duration != nil {
			later := current.Add(ext.Duration.Duration)
			requested = &later
		}
	}
	if requested == nil || !requested.After(current.Time) {
		return append(allErrs, field.Invalid(expiresPath, newSession.Status.ExpiresAt,
			fmt.Sprintf("must be later than the current expiry %s: an extension never moves it earlier", formatTime(current.Time))))
	}
	start := v1alpha1.InternalWindowStart(oldSession)
	if limit := start.Add(policy.MaxLifetime); requested.After(limit) {
		allErrs = append(allErrs, field.Invalid(expiresPath, formatTime(*requested), fmt.Sprintf(
			"a session may last at most %s from the start of its access window at %s (--session-max-lifetime), until %s",
			policy.MaxLifetime, formatTime(start), formatTime(limit))))
	}
	return allErrs
}

// wentIdle says why an idle session takes no more decisions or uses.
func wentIdle(s *clustergate.Session) string {
	return "the session went idle: " + v1alpha1.InternalIdleSince(s)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
