// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package storage holds the REST storage of SessionLocks on etcd.
package storage

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/registry/quorum"
	"github.com/clustergate/clustergate/pkg/registry/sessionlock"
)

// NewREST returns the storage of SessionLocks.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	strategy := sessionlock.NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clustergate.SessionLock{} },
		NewListFunc:               func() runtime.Object { return &clustergate.SessionLockList{} },
		PredicateFunc:             sessionlock.Match,
		DefaultQualifiedResource:  clustergate.Resource("sessionlocks"),
		SingularQualifiedResource: clustergate.Resource("sessionlock"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: sessionlock.NewTableConvertor(time.Now),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: sessionlock.GetAttrs}); err != nil {
		return nil, err
	}
	fromEtcd, err := quorum.NewLister(store, optsGetter)
	if err != nil {
		return nil, err
	}
	return &REST{Store: store, fromEtcd: fromEtcd}, nil
}

// REST serves the sessionlocks resource.
type REST struct {
	*genericregistry.Store
	fromEtcd *quorum.Lister
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type "kubectl get slock".
func (*REST) ShortNames() []string { return []string{"slock"} }

// Categories puts sessionlocks into "kubectl get clustergate".
func (*REST) Categories() []string { return []string{"clustergate"} }

// Holding returns the lock that holds a session with subject at now (the
// first by name), or nil. It reads every lock from etcd, not the watch
// cache, so that a lock created a moment ago refuses the create or
// extension that follows it on any replica.
func (r *REST) Holding(ctx context.Context, subject v1alpha1.LockSubject, now time.Time) (*clustergate.SessionLock, error) {
	list, err := r.fromEtcd.List(ctx)
	if err != nil {
		return nil, err
	}
	var found *clustergate.SessionLock
	for i := range list.(*clustergate.SessionLockList).Items {
		l := &list.(*clustergate.SessionLockList).Items[i]
		if v1alpha1.InternalLockMatches(l, subject, now) && (found == nil || l.Name < found.Name) {
			found = l
		}
	}
	return found, nil
}
