// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package intern makes the strings that repeat across objects share one
// copy in memory. Decoding gives every object its own copy of every string,
// so the watch cache and the caches of the controllers would hold a copy of
// the same condition messages, namespaces, finalizers and managedFields
// entries per object.
//
// Only strings that repeat are made canonical: names, UIDs, resource
// versions and the values of labels and annotations are left alone, because
// a canonical copy of a string that is unique to one object only adds an
// entry to the table of canonical strings. The keys of labels and
// annotations repeat by nature and are made canonical.
package intern

import (
	"reflect"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// String returns the canonical copy of s.
func String(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// Object makes the repeating strings of a decoded object canonical, in
// place: its namespace, the keys of its labels and annotations, its
// finalizers, the managers, operations, API versions and field types of its
// managedFields, the API versions and kinds of its owner references, and the
// types, reasons and messages of its status.conditions. Objects without
// metadata are left alone.
func Object(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetNamespace(String(m.GetNamespace()))
	Keys(m.GetLabels())
	Keys(m.GetAnnotations())
	// The getters return the object's own slices: changed in place.
	finalizers := m.GetFinalizers()
	for i := range finalizers {
		finalizers[i] = String(finalizers[i])
	}
	managed := m.GetManagedFields()
	for i := range managed {
		e := &managed[i]
		e.Manager, e.APIVersion, e.FieldsType = String(e.Manager), String(e.APIVersion), String(e.FieldsType)
		e.Operation = metav1.ManagedFieldsOperationType(String(string(e.Operation)))
	}
	owners := m.GetOwnerReferences()
	for i := range owners {
		o := &owners[i]
		o.APIVersion, o.Kind = String(o.APIVersion), String(o.Kind)
	}
	conds := conditions(obj)
	for i := range conds {
		c := &conds[i]
		c.Type, c.Reason, c.Message = String(c.Type), String(c.Reason), String(c.Message)
	}
}

// Keys makes the keys of m canonical, in place: storing under an equal key
// replaces the key a Go map holds, so the decoded copy becomes garbage.
func Keys[V any](m map[string]V) {
	for k, v := range m {
		m[String(k)] = v
	}
}

// conditions returns obj's status.conditions when they are metav1
// Conditions, as for every kind of clustergate (internal and versioned).
func conditions(obj runtime.Object) []metav1.Condition {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	status := v.Elem().FieldByName("Status")
	if !status.IsValid() || status.Kind() != reflect.Struct {
		return nil
	}
	c := status.FieldByName("Conditions")
	if !c.IsValid() || !c.CanInterface() {
		return nil
	}
	conds, _ := c.Interface().([]metav1.Condition)
	return conds
}

// Codec interns every object its inner codec decodes: the storage codec
// of the watch cache, which holds every object and, after a burst of
// writes, the previous versions of many.
type Codec struct {
	runtime.Codec
}

var _ runtime.Codec = Codec{}

// Decode decodes with the inner codec and interns the object.
func (c Codec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err == nil {
		Object(obj)
	}
	return obj, gvk, err
}
