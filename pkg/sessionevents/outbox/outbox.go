// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package outbox keeps session events in the server's own etcd until every
// sink they are for has acknowledged them: under a key prefix of its own
// (<etcd prefix>/clustergate.dev/sessionevents/<event id>), through the
// generic registry's storage layer with the server's storage settings (its
// etcd, TLS and encryption at rest), as JSON of a kind of its own that the
// API does not serve. An event is written once, by its deterministic id:
// the write of an id already there fails with AlreadyExists and changes
// nothing. A delivered event stays, with no sink pending, as long as its
// session exists, so that its id is not written again.
//
// Not a served API kind: its contents are the sinks' business, and an
// operator reads them through the metrics and the sinks; no RBAC, codegen
// or versioning to carry for a queue.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// Resource is the resource whose storage settings the outbox takes; the
// API does not serve it.
var Resource = schema.GroupResource{Group: "clustergate.dev", Resource: "sessionevents"}

// version is the kind's version in etcd.
var version = schema.GroupVersion{Group: "outbox.clustergate.dev", Version: "v1"}

// Entry is one event in the outbox. Its name is the event's id.
type Entry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Event is the event.
	Event sessionevents.Event `json:"event"`
	// Pending are the sinks that have not acknowledged it yet.
	Pending []string `json:"pending,omitempty"`
}

// EntryList is a list of Entries.
type EntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Entry `json:"items"`
}

// DeepCopyObject copies the entry through JSON: entries are small and few,
// and the copy cannot miss a field.
func (e *Entry) DeepCopyObject() runtime.Object { return jsonCopy(e, &Entry{}) }

// DeepCopyObject copies the list through JSON.
func (l *EntryList) DeepCopyObject() runtime.Object { return jsonCopy(l, &EntryList{}) }

func jsonCopy[T runtime.Object](in, out T) runtime.Object {
	raw, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		panic(fmt.Sprintf("copying %T: %v", in, err))
	}
	return out
}

// codec encodes entries as JSON of outbox.clustergate.dev/v1.
func codec() runtime.Codec {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(version, &Entry{}, &EntryList{})
	return serializer.NewCodecFactory(scheme).LegacyCodec(version)
}

// Outbox is the stored events.
type Outbox struct {
	store   storage.Interface
	prefix  string
	destroy factory.DestroyFunc
}

// New opens the outbox with the storage settings getter gives the
// Resource, its codec replaced by the outbox's own.
func New(getter generic.RESTOptionsGetter) (*Outbox, error) {
	opts, err := getter.GetRESTOptions(Resource, &Entry{})
	if err != nil {
		return nil, err
	}
	cfg := *opts.StorageConfig
	cfg.Codec = codec()
	prefix := "/" + opts.ResourcePrefix
	store, destroy, err := generic.NewRawStorage(&cfg, func() runtime.Object { return &Entry{} }, func() runtime.Object { return &EntryList{} }, prefix)
	if err != nil {
		return nil, err
	}
	return &Outbox{store: store, prefix: prefix, destroy: destroy}, nil
}

// Close lets go of the storage.
func (o *Outbox) Close() { o.destroy() }

func (o *Outbox) key(id string) string { return o.prefix + "/" + id }

// Add stores an event for the sinks pending; added is false when an event
// of its id is stored already, which stays as it is.
func (o *Outbox) Add(ctx context.Context, e sessionevents.Event, pending []string) (added bool, err error) {
	entry := &Entry{ObjectMeta: metav1.ObjectMeta{Name: e.ID}, Event: e, Pending: pending}
	err = o.store.Create(ctx, o.key(e.ID), entry, &Entry{}, 0)
	if storage.IsExist(err) {
		return false, nil
	}
	return err == nil, err
}

// List returns every stored event.
func (o *Outbox) List(ctx context.Context) ([]Entry, error) {
	list := &EntryList{}
	err := o.store.GetList(ctx, o.prefix+"/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list)
	return list.Items, err
}

// Done marks the event of id as acknowledged by the sinks named; none
// named is by every sink (an event dropped unsent). An event no longer
// stored is no error.
func (o *Outbox) Done(ctx context.Context, id string, sinks ...string) error {
	err := o.store.GuaranteedUpdate(ctx, o.key(id), &Entry{}, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
		e := obj.(*Entry)
		if len(sinks) == 0 {
			e.Pending = nil
		} else {
			e.Pending = slices.DeleteFunc(e.Pending, func(s string) bool { return slices.Contains(sinks, s) })
		}
		return e, nil
	}), nil)
	return ignoreNotFound(err)
}

// Delete removes the event of id.
func (o *Outbox) Delete(ctx context.Context, id string) error {
	err := o.store.Delete(ctx, o.key(id), &Entry{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
	return ignoreNotFound(err)
}

func ignoreNotFound(err error) error {
	if storage.IsNotFound(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
