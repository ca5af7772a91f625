// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionapprovalpolicy holds the registry strategy of
// SessionApprovalPolicies: what the server does to one on create and
// update, and how kubectl prints them.
package sessionapprovalpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
	"github.com/clustergate/clustergate/pkg/registry/sessionlock"
	"github.com/clustergate/clustergate/pkg/registry/table"
)

// Strategy is the create, update and delete strategy of
// SessionApprovalPolicies.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the strategy of SessionApprovalPolicies.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// NamespaceScoped is false: a policy is the whole server's.
func (Strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts the generation, which sessions record.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*clustergate.SessionApprovalPolicy).Generation = 1
}

// PrepareForUpdate bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*clustergate.SessionApprovalPolicy), old.(*clustergate.SessionApprovalPolicy)
	if !apiequality.Semantic.DeepEqual(newP.Spec, oldP.Spec) {
		newP.Generation = oldP.Generation + 1
	}
}

// Validate validates a new policy.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSessionApprovalPolicy(obj.(*clustergate.SessionApprovalPolicy))
}

// ValidateUpdate validates an update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionApprovalPolicyUpdate(obj.(*clustergate.SessionApprovalPolicy), old.(*clustergate.SessionApprovalPolicy))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate says that sessions created before keep the old policy.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	if obj.(*clustergate.SessionApprovalPolicy).Generation == old.(*clustergate.SessionApprovalPolicy).Generation {
		return nil
	}
	return []string{"sessions created before this change keep the policy as it was when they were created (status.approvalPolicy)"}
}

// Canonicalize does nothing: the objects have a single canonical form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: policies are created with create only.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: updates without a resourceVersion are allowed.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// GetAttrs returns the labels and fields a policy can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*clustergate.SessionApprovalPolicy)
	if !ok {
		return nil, nil, fmt.Errorf("not a SessionApprovalPolicy: %T", obj)
	}
	return p.Labels, generic.AddObjectMetaFieldsSet(fields.Set{}, &p.ObjectMeta, false), nil
}

// Match returns a matcher for a label and field selector.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// NewTableConvertor prints policies as NAME NAMESPACES TARGETS ACCESS
// APPROVAL APPROVERS AUTO-APPROVE MAX-TTL AGE, and with -o wide also SCOPED,
// EXCLUDE-OWNER-GROUPS and REASON.
func NewTableConvertor(now func() time.Time) table.Convertor[*clustergate.SessionApprovalPolicy] {
	return table.Convertor[*clustergate.SessionApprovalPolicy]{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Namespaces", Type: "string", Description: "Namespaces of the sessions the policy selects; <none> is all."},
			{Name: "Targets", Type: "string", Description: "Targets of the sessions the policy selects, shoot/NAME or cluster/NAME, and labels:SELECTOR for those it selects by label; <none> is all."},
			{Name: "Access", Type: "string", Description: "Access levels of the sessions the policy selects; <none> is all."},
			{Name: "Approval", Type: "string", Description: "How many distinct approvers must approve, or None."},
			{Name: "Approvers", Type: "string", Description: "Users and groups (group:NAME) who may decide; <none> is any holder of the verb approve."},
			{Name: "Auto-Approve", Type: "string", Description: "Owner groups approved without a human, and up to which TTL."},
			{Name: "Max-TTL", Type: "string", Description: "Longest TTL of a selected session; <none> is the server's."},
			{Name: "Scoped", Type: "string", Priority: 1, Description: "true: only scoped sessions; false: only whole-target ones; <none>: both."},
			{Name: "Exclude-Owner-Groups", Type: "string", Priority: 1, Description: "Groups an approver may not share with the owner."},
			{Name: "Reason", Type: "string", Priority: 1, Description: "Whether a selected session needs spec.reason."},
		},
		Cells: func(p *clustergate.SessionApprovalPolicy, _ time.Time) []any {
			sel := &p.Spec.Sessions
			targets := make([]string, 0, len(sel.Targets))
			for i := range sel.Targets {
				targets = append(targets, sessionlock.Target(&sel.Targets[i]))
			}
			if sel.TargetLabels != nil {
				targets = append(targets, "labels:"+metav1.FormatLabelSelector(sel.TargetLabels))
			}
			approval, approvers, excluded := "None", table.None, table.None
			if p.Spec.ApprovalRequired {
				approval = fmt.Sprint(approvalpolicy.Count(p.Spec.Approvers))
				if a := p.Spec.Approvers; a != nil {
					approvers = table.OrNone(strings.Join(append(append([]string{}, a.Users...), prefixed("group:", a.Groups)...), ","))
					excluded = table.OrNone(strings.Join(a.ExcludeOwnerGroups, ","))
				}
			}
			auto := table.None
			if a := p.Spec.AutoApprove; a != nil {
				auto = strings.Join(a.Groups, ",") + " <= " + duration.HumanDuration(a.MaxTTL.Duration)
			}
			maxTTL, scoped, reason := table.None, table.None, "Optional"
			if t := p.Spec.MaxTTL; t != nil {
				maxTTL = duration.HumanDuration(t.Duration)
			}
			if sel.Scoped != nil {
				scoped = fmt.Sprint(*sel.Scoped)
			}
			if p.Spec.RequireReason {
				reason = "Required"
			}
			return []any{table.OrNone(strings.Join(sel.Namespaces, ",")), table.OrNone(strings.Join(targets, ",")),
				table.OrNone(strings.Join(sel.AccessLevels, ",")), approval, approvers, auto, maxTTL, scoped, excluded, reason}
		},
		Now: now,
	}
}

// prefixed returns names with prefix before each.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
