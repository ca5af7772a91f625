// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package table

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestRowObject: a row carries its object's metadata without managedFields
// unless the client asks for the whole object, and the cached object keeps
// its managedFields.
func TestRowObject(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	object := func() *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre", ResourceVersion: "7",
			Labels: map[string]string{"team": "sre"}, Annotations: map[string]string{"k8s.io/initial-events-end": "true"},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "clustergate-session-controller", Operation: metav1.ManagedFieldsOperationApply}}}}
	}
	metadata := object()
	metadata.ManagedFields = nil
	convertor := Convertor[*metav1.PartialObjectMetadata]{
		Cells: func(*metav1.PartialObjectMetadata, time.Time) []any { return nil },
		Now:   func() time.Time { return now },
	}
	tests := []struct {
		name    string
		options runtime.Object
		want    runtime.Object
	}{
		{name: "no options", want: metadata},
		{name: "by default", options: &metav1.TableOptions{}, want: metadata},
		{name: "metadata", options: &metav1.TableOptions{IncludeObject: metav1.IncludeMetadata}, want: metadata},
		{name: "the object", options: &metav1.TableOptions{IncludeObject: metav1.IncludeObject}, want: object()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cached := object()
			table, err := convertor.ConvertToTable(context.Background(), cached, tt.options)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, table.Rows[0].Object.Object); diff != "" {
				t.Errorf("row object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]any{"s", "60m"}, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(object(), cached); diff != "" {
				t.Errorf("the cached object changed (-want +got):\n%s", diff)
			}
		})
	}
}
