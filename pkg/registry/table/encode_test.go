// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package table

import (
	"bytes"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// TestStreamRows: a Table written row by row is byte for byte what the
// generic server's JSON serializer writes whole; other objects and the
// other media types are left to it.
func TestStreamRows(t *testing.T) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	jsonOf := func(ns runtime.NegotiatedSerializer) runtime.Serializer {
		for _, info := range ns.SupportedMediaTypes() {
			if info.MediaType == runtime.ContentTypeJSON {
				return info.Serializer
			}
		}
		t.Fatal("no JSON serializer")
		return nil
	}
	whole, streamed := jsonOf(codecs), jsonOf(StreamRows(codecs))
	rows := func(n int) []metav1.TableRow {
		var rs []metav1.TableRow
		for i := range n {
			rs = append(rs, metav1.TableRow{
				Cells: []any{fmt.Sprintf("s-%05d", i), "<alice> & \"bob\"", int64(i), nil, 1.5, true},
				Conditions: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
					Reason: "Done", Message: "finished"}},
				Object: runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
					TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%05d", i), Namespace: "sre", Labels: map[string]string{"a": "b"}},
				}},
			})
		}
		return rs
	}
	tables := []struct {
		name  string
		table *metav1.Table
	}{
		{"no rows", &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}}}},
		{"empty rows", &metav1.Table{Rows: []metav1.TableRow{}}},
		{"one row", &metav1.Table{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Rows: rows(1)}},
		{"rows beyond a flush", &metav1.Table{
			TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
			ListMeta:          metav1.ListMeta{ResourceVersion: "42", Continue: "next"},
			ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: "the <name>"}},
			Rows:              rows(500),
		}},
		{"raw objects", &metav1.Table{Rows: []metav1.TableRow{{Cells: []any{"x"}, Object: runtime.RawExtension{Raw: []byte(`{"kind":"Pod"}`)}}}}},
	}
	for _, tt := range tables {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := whole.Encode(tt.table, &want); err != nil {
				t.Fatal(err)
			}
			if err := streamed.Encode(tt.table, &got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("written row by row:\n%.600s\nwhole:\n%.600s", got.String(), want.String())
			}
		})
	}
	t.Run("written as it goes", func(t *testing.T) {
		var w countingWriter
		if err := streamed.Encode(tables[3].table, &w); err != nil {
			t.Fatal(err)
		}
		if w.writes < 2 || w.largest > 64<<10 {
			t.Errorf("%d writes, the largest %d bytes, of %d in all: want it in pieces of about 32 KiB", w.writes, w.largest, w.total)
		}
	})
	t.Run("not a Table", func(t *testing.T) {
		var want, got bytes.Buffer
		status := &metav1.Status{Status: metav1.StatusFailure, Message: "<no>"}
		if err := whole.Encode(status, &want); err != nil {
			t.Fatal(err)
		}
		if err := streamed.Encode(status, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("got %s, want %s", got.String(), want.String())
		}
	})
}

// countingWriter counts the writes made to it and their sizes.
type countingWriter struct{ writes, largest, total int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(p))
	w.total += len(p)
	return len(p), nil
}
