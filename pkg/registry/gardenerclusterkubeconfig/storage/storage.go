// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package storage holds the REST storage of GardenerClusterKubeconfigs and
// their status on etcd.
package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/registry/gardenerclusterkubeconfig"
	"github.com/clustergate/clustergate/pkg/registry/status"
)

// GardenerClusterKubeconfigStorage holds the storage of the
// gardenerclusterkubeconfigs resource and its status subresource.
type GardenerClusterKubeconfigStorage struct {
	// GardenerClusterKubeconfig serves gardenerclusterkubeconfigs.
	GardenerClusterKubeconfig *REST
	// Status serves gardenerclusterkubeconfigs/status.
	Status *status.StatusREST
}

// NewStorage returns the storage of GardenerClusterKubeconfigs; with
// finalize, new objects carry the kubeconfig controller's finalizer (only
// for a server that runs the controller); project, the server's
// --gardener-project, is the default of Shoots named without one.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, finalize bool, project string) (GardenerClusterKubeconfigStorage, error) {
	strategy := gardenerclusterkubeconfig.NewStrategy(scheme, finalize, project)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clustergate.GardenerClusterKubeconfig{} },
		NewListFunc:               func() runtime.Object { return &clustergate.GardenerClusterKubeconfigList{} },
		PredicateFunc:             gardenerclusterkubeconfig.Match,
		DefaultQualifiedResource:  clustergate.Resource("gardenerclusterkubeconfigs"),
		SingularQualifiedResource: clustergate.Resource("gardenerclusterkubeconfig"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: gardenerclusterkubeconfig.NewTableConvertor(time.Now),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: gardenerclusterkubeconfig.GetAttrs}); err != nil {
		return GardenerClusterKubeconfigStorage{}, err
	}
	return GardenerClusterKubeconfigStorage{
		GardenerClusterKubeconfig: &REST{Store: store},
		Status:                    status.NewStatusREST(store, gardenerclusterkubeconfig.NewStatusStrategy(strategy)),
	}, nil
}

// REST serves the gardenerclusterkubeconfigs resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type "kubectl get gck".
func (*REST) ShortNames() []string { return []string{"gck"} }

// Categories puts gardenerclusterkubeconfigs into "kubectl get clustergate".
func (*REST) Categories() []string { return []string{"clustergate"} }
