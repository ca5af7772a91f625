// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quorum lists a resource straight from etcd with a quorum read, for
// the checks a create makes against objects written a moment before on any
// replica (the SessionLocks that hold a session, the policy that governs it).
package quorum

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
)

// Lister lists every object of one cluster-scoped resource from etcd.
//
// A consistent LIST through the Store is served from the watch cache once
// the cache has caught up with etcd's current revision, and a cache that
// sees no writes of its own resource catches up only at etcd's next
// progress notification: 50-100 ms per read, measured, for resources as
// rarely written as locks and policies, which every session create read.
// A quorum read of their few objects from etcd is as consistent and takes
// about a millisecond.
type Lister struct {
	storage storage.Interface
	key     string
	newList func() runtime.Object
}

// NewLister returns a Lister of the cluster-scoped resource store serves,
// on a storage of its own that bypasses the watch cache; store's
// DestroyFunc then closes that storage too. Call it after
// store.CompleteWithOptions.
func NewLister(store *genericregistry.Store, optsGetter generic.RESTOptionsGetter) (*Lister, error) {
	opts, err := optsGetter.GetRESTOptions(store.DefaultQualifiedResource, store.NewFunc())
	if err != nil {
		return nil, err
	}
	// A cluster-scoped resource's root key is its prefix as the Store
	// completed it, with its leading "/".
	key := store.KeyRootFunc(genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone))
	raw, destroy, err := generic.NewRawStorage(opts.StorageConfig, store.NewFunc, store.NewListFunc, key)
	if err != nil {
		return nil, err
	}
	next := store.DestroyFunc
	store.DestroyFunc = func() {
		destroy()
		if next != nil {
			next()
		}
	}
	return &Lister{storage: raw, key: key, newList: store.NewListFunc}, nil
}

// List returns every object, as the store's list type, read from etcd at
// its current revision.
func (l *Lister) List(ctx context.Context) (runtime.Object, error) {
	list := l.newList()
	if err := l.storage.GetList(ctx, l.key, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		return nil, err
	}
	return list, nil
}
