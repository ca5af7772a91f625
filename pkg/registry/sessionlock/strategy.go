// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionlock holds the registry strategy of SessionLocks: what the
// server does to one on create and update, and how kubectl prints them.
package sessionlock

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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/registry/table"
)

// Strategy is the create, update and delete strategy of SessionLocks.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the strategy of SessionLocks. Names may be generated
// (metadata.generateName), as the plugin's lock command does.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// NamespaceScoped is false: a lock is the whole server's.
func (Strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts the generation.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*clustergate.SessionLock).Generation = 1
}

// PrepareForUpdate bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newL, oldL := obj.(*clustergate.SessionLock), old.(*clustergate.SessionLock)
	if !apiequality.Semantic.DeepEqual(newL.Spec, oldL.Spec) {
		newL.Generation = oldL.Generation + 1
	}
}

// Validate validates a new SessionLock.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSessionLock(obj.(*clustergate.SessionLock))
}

// ValidateUpdate validates an update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSessionLockUpdate(obj.(*clustergate.SessionLock), old.(*clustergate.SessionLock))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize does nothing: the objects have a single canonical form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: locks are created with create only.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: updates without a resourceVersion are allowed.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// GetAttrs returns the labels and fields a lock can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	l, ok := obj.(*clustergate.SessionLock)
	if !ok {
		return nil, nil, fmt.Errorf("not a SessionLock: %T", obj)
	}
	return l.Labels, generic.AddObjectMetaFieldsSet(fields.Set{}, &l.ObjectMeta, false), nil
}

// Match returns a matcher for a label and field selector.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// Target prints the target a lock names as the plugin takes it:
// shoot/NAME or cluster/NAME, or None.
func Target(t *clustergate.SessionLockTarget) string {
	switch {
	case t == nil:
		return table.None
	case t.Shoot != nil:
		return "shoot/" + v1alpha1.ShootTargetName(t.Shoot.Project, t.Shoot.Name)
	case t.Cluster != nil:
		return "cluster/" + t.Cluster.Name
	}
	return table.None
}

// NewTableConvertor prints locks as NAME USER GROUP TARGET NAMESPACE STATE
// REASON EXPIRES-AT AGE.
func NewTableConvertor(now func() time.Time) table.Convertor[*clustergate.SessionLock] {
	return table.Convertor[*clustergate.SessionLock]{
		Columns: []metav1.TableColumnDefinition{
			{Name: "User", Type: "string", Description: "User names of the person the lock matches (spec.user and spec.users), in every identity space."},
			{Name: "Group", Type: "string", Description: "Group of the owner or requester the lock matches."},
			{Name: "Target", Type: "string", Description: "Target the lock matches: shoot/NAME or cluster/NAME."},
			{Name: "Namespace", Type: "string", Description: "Namespace of the sessions the lock matches."},
			{Name: "State", Type: "string", Description: "Active, or Expired once spec.expiresAt passed."},
			{Name: "Reason", Type: "string", Description: "Why the lock is in force."},
			{Name: "Expires-At", Type: "string", Format: "date-time", Description: "When the lock ends; <none> is never."},
		},
		Cells: func(l *clustergate.SessionLock, now time.Time) []any {
			state, expiresAt := "Active", table.None
			if at := l.Spec.ExpiresAt; at != nil {
				expiresAt = at.UTC().Format(time.RFC3339)
			}
			if v1alpha1.InternalLockExpired(l, now) {
				state = "Expired"
			}
			users := l.Spec.Users
			if l.Spec.User != "" {
				users = append([]string{l.Spec.User}, users...)
			}
			return []any{table.OrNone(strings.Join(users, ",")), table.OrNone(l.Spec.Group), Target(l.Spec.Target),
				table.OrNone(l.Spec.Namespace), state, l.Spec.Reason, expiresAt}
		},
		Now: now,
	}
}
