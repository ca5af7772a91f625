// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllerutil holds what clustergate's controllers share when
// they write: conditions merged into a status, NotFound as success, and the
// encoding of their core clients.
package controllerutil

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/intern"
)

// SlimForCache is the transform of the informers: it drops managedFields
// from cached objects, since nothing reads them from a cache and they are a
// large part of small objects such as Sessions (a create and a status apply
// already make two entries), and makes the strings that repeat across
// objects share memory (intern.Object). An update built from a cached copy
// keeps the stored managedFields, since the server ignores an empty list.
func SlimForCache(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	if o, ok := obj.(runtime.Object); ok {
		intern.Object(o)
	}
	return obj, nil
}

// InformerHandler is an event handler for an informer.
type InformerHandler struct {
	Informer cache.SharedIndexInformer
	Handler  cache.ResourceEventHandler
}

// AddHandlers adds each handler to its informer and returns a function that
// removes them all again: the informers are shared with the rest of the
// server and outlive a controller that lost its lease.
func AddHandlers(handlers ...InformerHandler) (remove func(), err error) {
	var registrations []func()
	remove = func() {
		for _, r := range registrations {
			r()
		}
	}
	for _, h := range handlers {
		registration, err := h.Informer.AddEventHandler(h.Handler)
		if err != nil {
			remove()
			return nil, err
		}
		registrations = append(registrations, func() { _ = h.Informer.RemoveEventHandler(registration) })
	}
	return remove, nil
}

// Protobuf returns a copy of cfg that speaks protobuf, as kube-controller-manager
// does: cheaper to decode than JSON for the thousands of Secrets the informers
// cache. Use it only for built-in types; custom resources answer JSON alone.
func Protobuf(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// SetConditions merges updates into a copy of existing conditions. A
// condition keeps its transition time while its status stays the same.
func SetConditions(existing []metav1.Condition, updates ...metav1.Condition) []metav1.Condition {
	merged := append([]metav1.Condition(nil), existing...)
	for _, u := range updates {
		meta.SetStatusCondition(&merged, u)
	}
	return merged
}

// IgnoreNotFound returns nil for a NotFound error: deleting what is gone,
// or releasing what was released, has succeeded.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
