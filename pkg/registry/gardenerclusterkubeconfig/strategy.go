// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gardenerclusterkubeconfig holds the registry strategies of
// GardenerClusterKubeconfigs: what the server does to one on create, update
// and status update.
package gardenerclusterkubeconfig

import (
	"context"
	"fmt"
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
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/registry/finalizers"
	"github.com/clustergate/clustergate/pkg/registry/table"
)

// Strategy is the create and update strategy of GardenerClusterKubeconfigs.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator

	// finalize adds the kubeconfig controller's finalizer at create.
	finalize bool
	// project is the server's default Gardener project (--gardener-project).
	project string
}

// NewStrategy returns the strategy of GardenerClusterKubeconfigs. With
// finalize, every new object carries the kubeconfig controller's finalizer
// from the start, which saves an update per object; only a server that runs
// the controller (controllers and a Gardener project) may set it, or
// nothing would release the finalizer.
func NewStrategy(typer runtime.ObjectTyper, finalize bool, project string) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, finalize: finalize, project: project}
}

// NamespaceScoped is true: GardenerClusterKubeconfigs live in namespaces.
func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields says that the main resource ignores status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// PrepareForCreate drops any status the client sent, defaults the Secret's
// namespace to the object's and the Shoot's project to the default one
// (v1alpha1.DefaultShootProject).
func (s Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	k := obj.(*clustergate.GardenerClusterKubeconfig)
	k.Generation = 1
	v1alpha1.FillShootProject(&k.Spec.Shoot, k.Namespace, s.project)
	if s.finalize {
		finalizers.Add(k, v1alpha1.KubeconfigFinalizer)
	}
	k.Status = clustergate.GardenerClusterKubeconfigStatus{}
	defaultSecretNamespace(k)
}

// PrepareForUpdate keeps the status and bumps the generation on spec
// changes. An update that names the Shoot without a project keeps the
// project filled in at create: a replace with the manifest the object was
// created from changes nothing.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newK, oldK := obj.(*clustergate.GardenerClusterKubeconfig), old.(*clustergate.GardenerClusterKubeconfig)
	newK.Status = oldK.Status
	defaultSecretNamespace(newK)
	if newK.Spec.Shoot.Project == "" && newK.Spec.Shoot.Name == oldK.Spec.Shoot.Name {
		newK.Spec.Shoot.Project = oldK.Spec.Shoot.Project
	}
	if !apiequality.Semantic.DeepEqual(newK.Spec, oldK.Spec) {
		newK.Generation = oldK.Generation + 1
	}
}

// defaultSecretNamespace covers bodies that name no namespace at all: the
// versioned defaulter runs at decoding, before the request's namespace is
// filled in.
func defaultSecretNamespace(k *clustergate.GardenerClusterKubeconfig) {
	if k.Spec.Kubeconfig.Secret.Namespace == "" {
		k.Spec.Kubeconfig.Secret.Namespace = k.Namespace
	}
}

// Validate validates a new GardenerClusterKubeconfig.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateGardenerClusterKubeconfig(obj.(*clustergate.GardenerClusterKubeconfig))
}

// ValidateUpdate validates an update of metadata and spec.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateGardenerClusterKubeconfigUpdate(obj.(*clustergate.GardenerClusterKubeconfig), old.(*clustergate.GardenerClusterKubeconfig))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize does nothing: the objects have a single canonical form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: objects are created with create only.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: updates without a resourceVersion are allowed.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// StatusStrategy is the strategy of the gardenerclusterkubeconfigs/status subresource.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the status strategy of GardenerClusterKubeconfigs.
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
	obj.(*clustergate.GardenerClusterKubeconfig).Spec = old.(*clustergate.GardenerClusterKubeconfig).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateGardenerClusterKubeconfigStatusUpdate(obj.(*clustergate.GardenerClusterKubeconfig), old.(*clustergate.GardenerClusterKubeconfig))
}

// GetAttrs returns the labels and fields an object can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	k, ok := obj.(*clustergate.GardenerClusterKubeconfig)
	if !ok {
		return nil, nil, fmt.Errorf("not a GardenerClusterKubeconfig: %T", obj)
	}
	return k.Labels, SelectableFields(k), nil
}

// SelectableFields returns the fields an object can be selected by.
func SelectableFields(k *clustergate.GardenerClusterKubeconfig) fields.Set {
	return generic.AddObjectMetaFieldsSet(fields.Set{
		v1alpha1.FieldShootName: k.Spec.Shoot.Name,
		v1alpha1.FieldState:     string(k.Status.State),
	}, &k.ObjectMeta, true)
}

// Match returns a matcher for a label and field selector.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// NewTableConvertor prints objects as NAME SHOOT SECRET STATE LAST-SYNC AGE.
func NewTableConvertor(now func() time.Time) table.Convertor[*clustergate.GardenerClusterKubeconfig] {
	return table.Convertor[*clustergate.GardenerClusterKubeconfig]{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Shoot", Type: "string", Description: "Gardener Shoot whose kubeconfig is kept, as <project>/<name>."},
			{Name: "Secret", Type: "string", Description: "Secret that holds the kubeconfig."},
			{Name: "State", Type: "string", Description: "Ready, Error, or Locked while a SessionLock on the Shoot holds it."},
			{Name: "Last-Sync", Type: "string", Description: "Time since the kubeconfig was last written."},
			{Name: "Expires-At", Type: "string", Format: "date-time", Priority: 1, Description: "When the kubeconfig expires."},
		},
		Cells: func(k *clustergate.GardenerClusterKubeconfig, now time.Time) []any {
			state, lastSync, expiresAt := string(k.Status.State), table.None, table.None
			if state == "" {
				state = table.None
			}
			if k.Status.LastSyncTime != nil {
				lastSync = table.Age(*k.Status.LastSyncTime, now)
			}
			if k.Status.ExpirationTime != nil {
				expiresAt = k.Status.ExpirationTime.UTC().Format(time.RFC3339)
			}
			return []any{v1alpha1.ShootTargetName(k.Spec.Shoot.Project, k.Spec.Shoot.Name), k.Spec.Kubeconfig.Secret.Name, state, lastSync, expiresAt}
		},
		Now: now,
	}
}
