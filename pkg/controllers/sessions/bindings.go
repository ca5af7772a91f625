// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	rbacapplyv1 "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// A scoped session's certificate carries no group that holds on the whole
// target, only the group that names the session (SessionGroup). The server
// binds that group to the level's NamespacedClusterRole with a RoleBinding
// in each namespace of the scope, before the session is Ready, and removes
// the bindings before its credentials when it ends. The bindings carry the
// labels of the objects the server keeps for a session and the session's
// UID, by which the orphan sweep (orphans.go) finds those whose session is
// gone.

// LabelSessionUID is the label of a session's RoleBindings on its target
// that holds the session's UID: a later session of the same name is
// another session.
const LabelSessionUID = "clustergate.dev/session-uid"

// BindingName is the name of a scoped session's RoleBinding in each
// namespace of its scope. A namespace name holds no dot, so the first dot
// after the prefix ends the session's namespace: no two sessions share a
// name. At most 20+63+1+63 characters, far below the 253 allowed.
func BindingName(s *v1alpha1.Session) string {
	return "clustergate-session." + s.Namespace + "." + s.Name
}

// BindingLabels are the labels of a session's RoleBindings.
func BindingLabels(s *v1alpha1.Session) map[string]string {
	l := credentials.Labels(s.Namespace, s.Name)
	l[LabelSessionUID] = string(s.UID)
	return l
}

// BindingsState is what a pass sees of the RoleBindings of the session's
// name on its target.
type BindingsState struct {
	// Observed: the target was asked this pass; otherwise nothing is known.
	Observed bool
	// Current are the session's bindings as they should be, in namespaces
	// of its scope.
	Current []types.NamespacedName
	// Stale are the bindings of the session's name that must go: an older
	// session's of the same name, one out of the scope or not as it should
	// be, and every one of a session being deleted.
	Stale []types.NamespacedName
	// Problem says why the missing bindings cannot be made, if so; retried
	// at RetryAt, or after the controller's RetryAfter when zero.
	Problem *TargetProblem
	RetryAt time.Time
}

// all are every binding of the session's name found.
func (b BindingsState) all() []types.NamespacedName {
	return slices.Concat(b.Current, b.Stale)
}

// missing are the namespaces of the session's scope without its current
// binding.
func (b BindingsState) missing(s *v1alpha1.Session) []string {
	have := sets.New[string]()
	for _, c := range b.Current {
		have.Insert(c.Namespace)
	}
	var out []string
	for _, ns := range s.Spec.Scope.Namespaces {
		if !have.Has(ns) {
			out = append(out, ns)
		}
	}
	return out
}

// desiredBinding is the RoleBinding of a session in a namespace: the
// session's own group bound to the level's ClusterRole.
func desiredBinding(s *v1alpha1.Session, clusterRole, namespace string) *rbacapplyv1.RoleBindingApplyConfiguration {
	return rbacapplyv1.RoleBinding(BindingName(s), namespace).WithLabels(BindingLabels(s)).
		WithRoleRef(rbacapplyv1.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(clusterRole)).
		WithSubjects(rbacapplyv1.Subject().WithKind(rbacv1.GroupKind).WithAPIGroup(rbacv1.GroupName).WithName(SessionGroup(s)))
}

// isCurrent tells whether a binding is the session's as it should be.
func isCurrent(b *rbacv1.RoleBinding, s *v1alpha1.Session, clusterRole string) bool {
	want := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: SessionGroup(s)}
	return b.Name == BindingName(s) && b.Labels[LabelSessionUID] == string(s.UID) &&
		b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole} &&
		len(b.Subjects) == 1 && b.Subjects[0] == want
}

// observeBindings finds the bindings of the session's name on its target
// and, while some of its scope are missing, whether they can be made: the
// ClusterRole and the namespaces exist, and the last attempt did not fail.
// A binding of a ClusterRole that does not exist would be created and
// grant nothing, so the role is looked for first. An unscoped session
// looks only for bindings an older session of its name left; a target
// that does not let the server list them had none made by it.
func (c *Controller) observeBindings(ctx context.Context, t *target, s *v1alpha1.Session, level *sessionaccess.Level, now time.Time) BindingsState {
	list, err := t.kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(credentials.Labels(s.Namespace, s.Name)).String()})
	switch {
	case err != nil && !Scoped(s):
		return BindingsState{}
	case err != nil:
		return BindingsState{Observed: true, Problem: targetProblem(err)}
	}
	b := BindingsState{Observed: true}
	scopable := Scoped(s) && level != nil && level.Scopable()
	for i := range list.Items {
		rb := &list.Items[i]
		key := types.NamespacedName{Namespace: rb.Namespace, Name: rb.Name}
		if scopable && s.DeletionTimestamp == nil && slices.Contains(s.Spec.Scope.Namespaces, rb.Namespace) && isCurrent(rb, s, level.NamespacedClusterRole) {
			b.Current = append(b.Current, key)
		} else {
			b.Stale = append(b.Stale, key)
		}
	}
	// Only a session that is to have its bindings needs to know what
	// keeps them from being made.
	if !scopable || s.DeletionTimestamp != nil || v1alpha1.SessionStateAt(s, now) == v1alpha1.SessionIdle {
		return b
	}
	missing := b.missing(s)
	if len(missing) == 0 {
		c.bindingFailures.Forget(s.UID)
		return b
	}
	if f, ok := c.bindingFailures.Get(s.UID); ok {
		if at := f.RetryAt(time.Second, c.opts.RetryAfter); now.Before(at) {
			b.Problem, b.RetryAt = &TargetProblem{Reason: f.Reason, Message: f.Message}, at
			return b
		}
	}
	role := level.NamespacedClusterRole
	if _, err := t.kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		b.Problem = &TargetProblem{Reason: v1alpha1.SessionReasonClusterRoleNotFound, Message: fmt.Sprintf(
			"ClusterRole %s of access level %s does not exist on the target", role, level.Name)}
		return b
	} else if err != nil {
		b.Problem = targetProblem(err)
		return b
	}
	var absent []string
	for _, name := range missing {
		ns, err := t.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			absent = append(absent, name)
		case err != nil:
			b.Problem = targetProblem(err)
			return b
		case ns.DeletionTimestamp != nil:
			absent = append(absent, name+" (being deleted)")
		}
	}
	if len(absent) > 0 {
		b.Problem = &TargetProblem{Reason: v1alpha1.SessionReasonNamespaceNotFound, Message: fmt.Sprintf(
			"namespaces of the session's scope do not exist on the target: %s", strings.Join(absent, ", "))}
	}
	return b
}

// bindingStep is the next step towards a scoped session's bindings once
// its credentials are minted: the stale ones go, then the missing ones are
// applied, one per pass; or nil, with when to look again while a problem
// holds them up (0: no need).
func bindingStep(o Observed, cfg Config) (*Action, time.Duration) {
	s, b := o.Session, o.Bindings
	switch {
	case !Scoped(s):
		return nil, 0
	case o.Target != nil && !b.Observed:
		step, _ := targetWait(o, cfg)
		return nil, step.RequeueAfter
	case o.Level == nil || !o.Level.Scopable() || !b.Observed:
		return nil, 0
	case len(b.Stale) > 0:
		return &Action{Type: DeleteBinding, Binding: b.Stale[0]}, 0
	case b.Problem != nil:
		if !b.RetryAt.IsZero() {
			return nil, max(b.RetryAt.Sub(o.Now), time.Millisecond)
		}
		return nil, cfg.RetryAfter
	}
	if missing := b.missing(s); len(missing) > 0 {
		return &Action{Type: ApplyBinding, Binding: types.NamespacedName{Namespace: missing[0], Name: BindingName(s)}}, 0
	}
	return nil, 0
}

// scopeCondition is the ScopeReady condition of a scoped session, nil for
// an unscoped one: as the bindings were observed this pass, or as it
// stands while the target was not asked (its bindings were made, or the
// session waits before any are).
func scopeCondition(o Observed) *metav1.Condition {
	s, b := o.Session, o.Bindings
	if !Scoped(s) {
		return nil
	}
	c := &metav1.Condition{Type: v1alpha1.SessionConditionScopeReady, Status: metav1.ConditionFalse}
	role := ""
	if o.Level != nil {
		role = o.Level.NamespacedClusterRole
	}
	switch {
	case v1alpha1.SessionStateAt(s, o.Now) == v1alpha1.SessionIdle:
		c.Reason, c.Message = v1alpha1.SessionReasonIdle, "the session's RoleBindings are removed with its credentials"
	case role == "":
		c.Reason, c.Message = v1alpha1.SessionReasonAccessLevelInvalid, fmt.Sprintf(
			"access level %q has no namespacedClusterRole in the server's configuration: a session of it cannot be scoped", s.Spec.AccessLevel.Group)
	case o.Target != nil && !b.Observed:
		c.Reason, c.Message = o.Target.Reason, o.Target.Message
	case b.Problem != nil:
		c.Reason, c.Message = b.Problem.Reason, b.Problem.Message
	case b.Observed && len(b.Stale) == 0 && len(b.missing(s)) == 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.SessionReasonBound
		c.Message = fmt.Sprintf("ClusterRole %s is bound to group %s in namespaces %s of the target",
			role, SessionGroup(s), strings.Join(s.Spec.Scope.Namespaces, ", "))
	case b.Observed:
		c.Reason, c.Message = v1alpha1.SessionReasonBinding, fmt.Sprintf("binding ClusterRole %s to group %s in namespaces %s of the target",
			role, SessionGroup(s), strings.Join(b.missing(s), ", "))
	default:
		if have := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionScopeReady); have != nil {
			c.Status, c.Reason, c.Message = have.Status, have.Reason, have.Message
			break
		}
		c.Reason, c.Message = v1alpha1.SessionReasonBinding, "the session's RoleBindings are made once its credentials are minted"
	}
	return c
}

// scopePending tells whether a pass must look at a scoped session's
// bindings on its target: they are not all made yet, or an idle session's
// must go before its credentials do.
func scopePending(o Observed) bool {
	s := o.Session
	if !Scoped(s) {
		return false
	}
	if v1alpha1.SessionStateAt(s, o.Now) == v1alpha1.SessionIdle {
		return o.Credentials != nil
	}
	return !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionScopeReady)
}

// bindingCleanupWait is how long a deleted scoped session waits before its
// next look at a target that could not be asked for its bindings, or 0
// when it need not: the bindings are known gone, the target is gone for
// good or was never reachable with the server's credentials (a missing or
// unmarked Secret, no Gardener project: waiting changes nothing), or
// cfg.BindingCleanupTimeout has passed since the delete. Bindings left are
// the orphan sweep's; they grant only the group that names the session,
// which no certificate carries once its credentials are gone, and a later
// session of the name removes them before its own certificate is issued.
func bindingCleanupWait(o Observed, cfg Config) time.Duration {
	s, b := o.Session, o.Bindings
	if !Scoped(s) || s.DeletionTimestamp == nil || b.Observed && b.Problem == nil {
		return 0
	}
	problem := b.Problem
	if problem == nil {
		problem = o.Target
	}
	if problem == nil || problem.Reason != v1alpha1.SessionReasonTargetUnreachable && problem.Reason != v1alpha1.SessionReasonTargetForbidden {
		return 0
	}
	deadline := s.DeletionTimestamp.Add(cfg.BindingCleanupTimeout)
	if !o.Now.Before(deadline) {
		return 0
	}
	return min(cfg.RetryAfter, deadline.Sub(o.Now))
}
