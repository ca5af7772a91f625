// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package table turns objects of one kind into the server-side tables that
// kubectl get prints.
package table

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// None is printed for a value that is not set, as kubectl does.
const None = "<none>"

// Convertor prints objects of type T with a NAME column first, the given
// columns next and an AGE column last.
type Convertor[T metav1.Object] struct {
	// Columns describe the cells that Cells returns, in order.
	Columns []metav1.TableColumnDefinition
	// Cells returns the cells of one object's row at the given moment.
	Cells func(obj T, now time.Time) []any
	// Now is the clock that ages are computed against.
	Now func() time.Time
}

var _ rest.TableConvertor = Convertor[*metav1.ObjectMeta]{}

// ConvertToTable converts a single object or a list into a table.
func (c Convertor[T]) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := c.Now()
	t := &metav1.Table{}
	opts, _ := tableOptions.(*metav1.TableOptions)
	if opts == nil || !opts.NoHeaders {
		t.ColumnDefinitions = append(append([]metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name of the object."},
		}, c.Columns...), metav1.TableColumnDefinition{
			Name: "Age", Type: "string", Description: "Time since the object was created.",
		})
	}

	objects := []runtime.Object{object}
	if meta.IsListType(object) {
		var err error
		if objects, err = meta.ExtractList(object); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(object); err == nil {
			t.ResourceVersion = l.GetResourceVersion()
			t.Continue = l.GetContinue()
			t.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else if m, err := meta.Accessor(object); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}

	t.Rows = make([]metav1.TableRow, 0, len(objects))
	for _, o := range objects {
		typed, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("cannot print %T as a table", o)
		}
		cells := append([]any{typed.GetName()}, c.Cells(typed, now)...)
		cells = append(cells, Age(typed.GetCreationTimestamp(), now))
		row := metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: o}}
		if rowMetadataOnly(opts) {
			row.Object.Object = rowMetadata(typed)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// rowMetadataOnly tells whether the rows carry only their objects'
// metadata, as the API server's handler makes them for every includeObject
// but Object and None.
func rowMetadataOnly(opts *metav1.TableOptions) bool {
	return opts == nil || opts.IncludeObject == "" || opts.IncludeObject == metav1.IncludeMetadata
}

// rowMetadata is the metadata a row carries: the object's without its
// managedFields. kubectl prints rows from their cells and reads only names,
// labels and annotations of their metadata, and the managedFields of an
// object its controller writes status to by server-side apply are most of
// a row's bytes (1.5 of 3.2 kB a Session): a LIST as a Table of 10,000 objects
// would be more than twice as large with them. A client that needs them
// asks for includeObject=Object, or does not ask for a Table.
func rowMetadata(o metav1.Object) *metav1.PartialObjectMetadata {
	m := meta.AsPartialObjectMetadata(o)
	m.ManagedFields = nil
	return m
}

// Age prints how long ago a moment was, or None for an unset one.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return None
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// OrNone prints a string, or None for an empty one.
func OrNone(s string) string {
	if s == "" {
		return None
	}
	return s
}
