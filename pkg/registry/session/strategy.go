// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package session holds the registry strategies of Sessions: what the server
// does to a Session on create, update and status update.
package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
	"github.com/clustergate/clustergate/pkg/registry/finalizers"
	"github.com/clustergate/clustergate/pkg/registry/table"
)

// Strategy is the create and update strategy of Sessions.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator

	policy validation.SessionLimits
	clock  clock.PassiveClock
	// finalize adds the session controller's finalizer at create.
	finalize bool
	// project is the server's default Gardener project (--gardener-project).
	project string
}

// NewStrategy returns the strategy of Sessions under the server's policy.
// With finalize, every new Session carries the session controller's
// finalizer from the start: the controller's first pass then writes only
// the status, not an update racing the creates of other sessions. Only a
// server that runs the controller may set it, or nothing would release the
// finalizer. A Shoot target without a project gets the default one of the
// session's namespace (v1alpha1.DefaultShootProject) under project, the
// server's --gardener-project.
func NewStrategy(typer runtime.ObjectTyper, policy validation.SessionLimits, finalize bool, project string) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, policy: policy, clock: clock.RealClock{}, finalize: finalize, project: project}
}

// FillShootProject gives the session's Shoot target, if it names no
// project, the default one: before anything matches on the target
// (approval policies, locks, TargetAccess), and at create.
func (st Strategy) FillShootProject(s *clustergate.Session) {
	v1alpha1.FillShootProject(s.Spec.Target.Shoot, s.Namespace, st.project)
}

// NamespaceScoped is true: Sessions live in namespaces.
func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields says that the main resource ignores status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// PrepareForCreate drops any status the client sent and writes the parts of
// the status that are known at creation: the proxy endpoint, and either the
// expiry or, for an access group that needs approval, the pending approval
// of the opening (the expiry is then written at approval). Whether it needs
// approval is the word of the SessionApprovalPolicy that governs it, which
// the session keeps, when the storage found one (WithApprovalPolicy), and
// otherwise the flags'; a policy's auto-approval is written as an approved
// opening. Writing the expiry here, not in a controller, means no Session is ever usable without
// one. A session that names no idle timeout gets the server's default here,
// not in the scheme's defaults: it is the server's policy, which another
// server with other flags would not share.
func (st Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s := obj.(*clustergate.Session)
	s.Generation = 1
	st.FillShootProject(s)
	if d := st.policy.DefaultIdleTimeout(); s.Spec.IdleTimeout == nil && d > 0 {
		s.Spec.IdleTimeout = &metav1.Duration{Duration: d}
	}
	if st.finalize {
		finalizers.Add(s, v1alpha1.SessionFinalizer)
	}
	s.Status = clustergate.SessionStatus{Endpoint: v1alpha1.ProxyEndpoint(s.Namespace, s.Name)}
	needsApproval := st.policy.NeedsApproval(s.Spec.AccessLevel.Group)
	if p := approvalPolicyFrom(ctx); p != nil {
		s.Status.ApprovalPolicy = approvalpolicy.Apply(p, s)
		needsApproval = s.Status.ApprovalPolicy.ApprovalRequired
	}
	ttl := s.Spec.TTL.Duration
	switch applied := s.Status.ApprovalPolicy; {
	case needsApproval && approvalpolicy.AutoApproves(applied, ttl):
		s.Status.Approvals = []clustergate.SessionApproval{
			approvalpolicy.AutoApproval(applied, clustergate.ApprovalOpen, 0, requester(ctx), s.CreationTimestamp.Time, ttl)}
	case needsApproval:
		s.Status.Approvals = []clustergate.SessionApproval{
			approvalpolicy.Request(applied, clustergate.ApprovalOpen, 0, requester(ctx), s.CreationTimestamp.Time)}
		return
	}
	if ttl > 0 && !s.CreationTimestamp.IsZero() {
		expiresAt := metav1.NewTime(v1alpha1.ExpiryAfter(s.CreationTimestamp.Time, s.Spec.TTL.Duration))
		s.Status.ExpiresAt = &expiresAt
	}
}

// PrepareForUpdate keeps the status and bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newSession, oldSession := obj.(*clustergate.Session), old.(*clustergate.Session)
	newSession.Status = oldSession.Status
	// An update that names the Shoot without a project keeps the one
	// filled in at create, as a replace with the original manifest would.
	if n, o := newSession.Spec.Target.Shoot, oldSession.Spec.Target.Shoot; n != nil && o != nil && n.Project == "" && n.Name == o.Name {
		n.Project = o.Project
	}
	if !apiequality.Semantic.DeepEqual(newSession.Spec, oldSession.Spec) {
		newSession.Generation = oldSession.Generation + 1
	}
}

// Validate validates a new Session against the server's policy and the
// SessionApprovalPolicy that governs it.
func (s Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	allErrs := validation.ValidateSession(obj.(*clustergate.Session), s.policy)
	if p := approvalPolicyFrom(ctx); p != nil {
		allErrs = append(allErrs, validation.ValidateSessionUnderPolicy(obj.(*clustergate.Session), p)...)
	}
	return allErrs
}

// ValidateUpdate refuses any change to the spec.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionUpdate(obj.(*clustergate.Session), old.(*clustergate.Session))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize does nothing: Sessions have a single canonical form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: a Session is created with create only.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: updates without a resourceVersion are allowed.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// StatusStrategy is the strategy of the sessions/status subresource.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the status strategy of Sessions.
func NewStatusStrategy(s Strategy) StatusStrategy {
	return StatusStrategy{Strategy: s}
}

// GetResetFields says that the status subresource ignores spec.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("spec")),
	}
}

// PrepareForUpdate keeps the spec: the status subresource changes only status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*clustergate.Session).Spec = old.(*clustergate.Session).Spec
}

// ValidateUpdate validates the new status.
func (st StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionStatusUpdate(obj.(*clustergate.Session), old.(*clustergate.Session), st.clock.Now())
}

// GetAttrs returns the labels and fields a Session can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*clustergate.Session)
	if !ok {
		return nil, nil, fmt.Errorf("not a Session: %T", obj)
	}
	return s.Labels, SelectableFields(s), nil
}

// SelectableFields returns the fields a Session can be selected by.
func SelectableFields(s *clustergate.Session) fields.Set {
	shoot := ""
	if s.Spec.Target.Shoot != nil {
		shoot = s.Spec.Target.Shoot.Name
	}
	pending := ""
	if a := s.Status.PendingApproval(); a != nil {
		pending = string(a.Type)
	}
	return generic.AddObjectMetaFieldsSet(fields.Set{
		v1alpha1.FieldOwnerUsername:   s.Spec.Owner.Username,
		v1alpha1.FieldTargetShootName: shoot,
		v1alpha1.FieldPendingApproval: pending,
	}, &s.ObjectMeta, true)
}

// Match returns a matcher for a label and field selector.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// NewTableConvertor prints Sessions as NAME OWNER TARGET ACCESS EXPIRES READY
// AGE, and with -o wide also SCOPE, EXPIRES-AT, APPROVAL, LAST-USED and
// REASON.
func NewTableConvertor(now func() time.Time) table.Convertor[*clustergate.Session] {
	return table.Convertor[*clustergate.Session]{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Owner", Type: "string", Description: "User who may use the session."},
			{Name: "Target", Type: "string", Description: "Cluster the session reaches."},
			{Name: "Access", Type: "string", Description: "Group the session's credentials carry."},
			{Name: "Expires", Type: "string", Description: "Time left until the session expires."},
			{Name: "Ready", Type: "string", Description: "Whether the session can be used: True, False, Unknown, or Locked while a SessionLock holds it."},
			{Name: "Scope", Type: "string", Priority: 1, Description: "The namespaces of the target the session reaches, or " + wholeTarget + " for the whole target."},
			{Name: "Expires-At", Type: "string", Format: "date-time", Priority: 1, Description: "When the session expires."},
			{Name: "Approval", Type: "string", Priority: 1, Description: "The last approval's decision and approver, for sessions that need one."},
			{Name: "Last-Used", Type: "string", Priority: 1, Description: "How long ago the session's proxy was last used, as the replicas recorded it (to about a minute), and its idle timeout."},
			{Name: "Reason", Type: "string", Priority: 1, Description: "Why the session was opened."},
		},
		Cells: func(s *clustergate.Session, now time.Time) []any {
			expires, expiresAt := table.None, table.None
			if s.Status.ExpiresAt != nil {
				expiresAt = s.Status.ExpiresAt.UTC().Format(time.RFC3339)
				if left := s.Status.ExpiresAt.Sub(now); left > 0 {
					expires = duration.HumanDuration(left)
				} else {
					expires = "Expired"
				}
			}
			ready := string(metav1.ConditionUnknown)
			if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); c != nil {
				ready = string(c.Status)
				if c.Status != metav1.ConditionTrue && c.Reason == v1alpha1.SessionReasonLocked {
					ready = v1alpha1.SessionReasonLocked
				}
			}
			return []any{s.Spec.Owner.Username, Target(&s.Spec.Target), s.Spec.AccessLevel.Group, expires, ready, scopeCell(s.Spec.Scope), expiresAt,
				approvalCell(s.Status.Approvals), lastUsedCell(s, now), table.OrNone(s.Spec.Reason)}
		},
		Now: now,
	}
}

// lastUsedCell prints how long ago a session was last used and, when it
// has one, its idle timeout: "3m ago (idle 30m)", "<none> (idle 30m)".
func lastUsedCell(s *clustergate.Session, now time.Time) string {
	cell := table.None
	if s.Status.LastUsedAt != nil {
		cell = duration.HumanDuration(now.Sub(s.Status.LastUsedAt.Time)) + " ago"
	}
	if s.Spec.IdleTimeout != nil && s.Spec.IdleTimeout.Duration > 0 {
		cell += " (idle " + duration.HumanDuration(s.Spec.IdleTimeout.Duration) + ")"
	}
	return cell
}

// approvalCell prints the last approval as "Approved by bob", "Pending"
// or, for an extension, "Extend Pending".
func approvalCell(approvals []clustergate.SessionApproval) string {
	if len(approvals) == 0 {
		return table.None
	}
	a := approvals[len(approvals)-1]
	cell := string(a.Decision)
	if a.Type == clustergate.ApprovalExtend {
		cell = "Extend " + cell
	}
	if a.DecidedBy != "" {
		cell += " by " + a.DecidedBy
	}
	return cell
}

// wholeTarget is the SCOPE of an unscoped session: every namespace, as "*"
// is in RBAC.
const wholeTarget = "*"

// scopeCell prints a session's scope as its namespaces joined by ",", or
// wholeTarget when it has none.
func scopeCell(scope *clustergate.SessionScope) string {
	if scope == nil {
		return wholeTarget
	}
	return strings.Join(scope.Namespaces, ",")
}

// Target prints a session target as kind/name, a Shoot as
// shoot/<project>/<name>.
func Target(t *clustergate.SessionTarget) string {
	switch {
	case t.Shoot != nil:
		return "shoot/" + v1alpha1.ShootTargetName(t.Shoot.Project, t.Shoot.Name)
	case t.Cluster != nil:
		return "cluster/" + t.Cluster.KubeconfigSecretRef.Name
	}
	return table.None
}
