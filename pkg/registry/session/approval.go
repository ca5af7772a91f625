// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/audit"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
)

// ApprovalStrategy is the strategy of the sessions/approval subresource,
// modelled on CertificateSigningRequest approval: the client sends the
// session with the decision (Approved or Denied) and reason written into
// its pending approval; everything else it sends is ignored. The server
// records the decision with who decided and when among the request's
// decisions. A denial settles the request; an approval does once as many
// distinct approvers approved as the request requires (one unless a
// SessionApprovalPolicy asks for more), and until then the request stays
// pending. On settling it stamps decidedBy and decidedAt and, on an
// approval, moves the expiry: to the approval's time + ttl for the
// opening, later by the duration for an extension. Who may decide is the SessionOwner admission plugin's question
// (the verb "approve", and never on one's own request).
type ApprovalStrategy struct {
	Strategy
}

// NewApprovalStrategy returns the approval strategy of Sessions.
func NewApprovalStrategy(s Strategy) ApprovalStrategy { return ApprovalStrategy{Strategy: s} }

// GetResetFields says that the approval subresource changes only approvals.
func (ApprovalStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetAllBut(fieldpath.MakePathOrDie("status", "approvals"))
}

// PrepareForUpdate keeps the stored session, metadata included, and takes
// only the approvals from the new one; a decision on the pending approval
// is stamped and applied.
func (st ApprovalStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	newSession, oldSession := obj.(*clustergate.Session), old.(*clustergate.Session)
	approvals := newSession.Status.Approvals
	keepStored(newSession, oldSession)
	newSession.Status.Approvals = approvals

	n := len(approvals)
	if n == 0 || n != len(oldSession.Status.Approvals) || oldSession.Status.PendingApproval() == nil {
		return // validation says what is wrong
	}
	decided, asked := &approvals[n-1], &oldSession.Status.Approvals[n-1]
	if decided.Decision != clustergate.ApprovalApproved && decided.Decision != clustergate.ApprovalDenied {
		return // validation says what is wrong
	}
	now := metav1.NewTime(st.clock.Now().Truncate(time.Second))
	decision := clustergate.ApproverDecision{Approver: requester(ctx), Decision: decided.Decision, DecidedAt: now, Reason: decided.Reason}
	decided.Policy, decided.Required = asked.Policy, asked.Required
	decided.Decisions = append(slices.Clone(asked.Decisions), decision)
	AuditReason(ctx, newSession)
	if decided.Decision == clustergate.ApprovalApproved && int32(len(decided.Approvers())) < decided.RequiredApprovers() {
		// Not enough approvers yet: the request keeps waiting.
		decided.Decision, decided.Reason = clustergate.ApprovalPending, asked.Reason
		audit.AddAuditAnnotations(ctx, AuditDecision, fmt.Sprintf("%s Approved (%d of %d)", decided.Type, len(decided.Approvers()), decided.RequiredApprovers()),
			AuditDecisionReason, decision.Reason)
		return
	}
	decided.DecidedBy, decided.DecidedAt = decision.Approver, &now
	audit.AddAuditAnnotations(ctx, AuditDecision, string(decided.Type)+" "+string(decided.Decision), AuditDecisionReason, decided.Reason)
	if decided.Decision != clustergate.ApprovalApproved {
		return
	}
	var expiresAt time.Time
	switch {
	case decided.Type == clustergate.ApprovalOpen:
		expiresAt = v1alpha1.ExpiryAfter(now.Time, newSession.Spec.TTL.Duration)
	case decided.Duration != nil && newSession.Status.ExpiresAt != nil:
		expiresAt = v1alpha1.ExpiryAfter(newSession.Status.ExpiresAt.Time, decided.Duration.Duration)
	default:
		return
	}
	newSession.Status.ExpiresAt = &metav1.Time{Time: expiresAt}
}

// ValidateUpdate validates the decision.
func (st ApprovalStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionApprovalUpdate(obj.(*clustergate.Session), old.(*clustergate.Session), st.policy, st.clock.Now())
}

// ExtensionStrategy is the strategy of the sessions/extension subresource:
// the client sends the session with status.expiresAt set to when it wants
// it to end; everything else it sends is ignored. On a session that needed
// approval the extension waits for approvers as an Extend approval, under
// the same SessionApprovalPolicy as the opening, which approves it at once
// when it auto-approved the owner and the access window stays within its
// auto-approval TTL; otherwise the expiry moves at once. It never moves
// earlier, and no later than the policy's lifetime cap. Who may extend is the SessionOwner
// admission plugin's question (the verb "extend", and the owner or a holder
// of "assign").
type ExtensionStrategy struct {
	Strategy
}

// NewExtensionStrategy returns the extension strategy of Sessions.
func NewExtensionStrategy(s Strategy) ExtensionStrategy { return ExtensionStrategy{Strategy: s} }

// GetResetFields says that the extension subresource changes only the expiry.
func (ExtensionStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetAllBut(fieldpath.MakePathOrDie("status", "expiresAt"))
}

// PrepareForUpdate keeps the stored session, metadata included, and applies
// the requested expiry, or records it as an extension waiting for approval.
func (st ExtensionStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	newSession, oldSession := obj.(*clustergate.Session), old.(*clustergate.Session)
	requested := newSession.Status.ExpiresAt
	keepStored(newSession, oldSession)
	current := oldSession.Status.ExpiresAt
	if requested == nil || current == nil || !requested.After(current.Time) {
		newSession.Status.ExpiresAt = requested // validation says what is wrong
		return
	}
	later := requested.Truncate(time.Second)
	if len(oldSession.Status.Approvals) == 0 {
		newSession.Status.ExpiresAt = &metav1.Time{Time: later}
		return
	}
	applied, now := oldSession.Status.ApprovalPolicy, st.clock.Now().Truncate(time.Second)
	if window := later.Sub(v1alpha1.InternalWindowStart(oldSession)); approvalpolicy.AutoApproves(applied, window) {
		newSession.Status.Approvals = append(newSession.Status.Approvals,
			approvalpolicy.AutoApproval(applied, clustergate.ApprovalExtend, later.Sub(current.Time), requester(ctx), now, window))
		newSession.Status.ExpiresAt = &metav1.Time{Time: later}
		return
	}
	newSession.Status.Approvals = append(newSession.Status.Approvals,
		approvalpolicy.Request(applied, clustergate.ApprovalExtend, later.Sub(current.Time), requester(ctx), now))
}

// ValidateUpdate validates the extension.
func (st ExtensionStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionExtensionUpdate(obj.(*clustergate.Session), old.(*clustergate.Session), st.policy, st.clock.Now())
}

// keepStored makes s the stored session old again, but for the managed
// fields the field manager wrote for this request. The approval and
// extension subresources take a single field from the request: anything
// else, metadata included, would let a holder of their verb alone strip the
// finalizer or add an owner reference, and so have the garbage collector
// delete a session in use.
func keepStored(s, old *clustergate.Session) {
	managedFields := s.ManagedFields
	*s = *old.DeepCopy()
	s.ManagedFields = managedFields
}

// resetAllBut says that a subresource ignores the metadata, the spec and
// every status field except kept.
func resetAllBut(kept fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	reset := fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
	for _, f := range []string{"expiresAt", "endpoint", "backendURL", "observedGeneration", "conditions", "approvals", "lastUsedAt", "approvalPolicy"} {
		if p := fieldpath.MakePathOrDie("status", f); !p.Equals(kept) {
			reset.Insert(p)
		}
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): reset}
}

// Audit annotations on requests about a session: the audit event itself says
// who and when.
const (
	// AuditSessionReason is the session's spec.reason, on every proxied request
	// and every decision.
	AuditSessionReason = "clustergate.dev/session-reason"
	// AuditDecision is what an approver decided: "Open Approved", say.
	AuditDecision = "clustergate.dev/decision"
	// AuditDecisionReason is the approver's reason.
	AuditDecisionReason = "clustergate.dev/decision-reason"
)

// AuditReason puts the session's justification into the audit event of the
// request in ctx.
func AuditReason(ctx context.Context, s *clustergate.Session) {
	if s.Spec.Reason != "" {
		audit.AddAuditAnnotation(ctx, AuditSessionReason, s.Spec.Reason)
	}
}

// requester is the name of the user making the request.
func requester(ctx context.Context) string {
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}
