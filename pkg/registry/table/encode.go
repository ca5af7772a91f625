// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package table

import (
	"bytes"
	"encoding/json"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// StreamRows returns ns with its JSON serializer writing a Table's rows one
// at a time, as the generic server writes a list's items; pretty and
// streaming serializers are kept.
//
// The generic server encodes a Table answer whole, into a buffer of
// encoding/json's pool, which keeps it at its largest size without limit:
// after a Table LIST of 10,000 Sessions a 16 MB buffer that every later
// small JSON answer takes and gives back, so that no collection frees it.
// The bytes written are the same.
func StreamRows(ns runtime.NegotiatedSerializer) runtime.NegotiatedSerializer {
	return rowStreamingSerializer{ns}
}

type rowStreamingSerializer struct {
	runtime.NegotiatedSerializer
}

func (s rowStreamingSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := s.NegotiatedSerializer.SupportedMediaTypes()
	out := make([]runtime.SerializerInfo, len(infos))
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeJSON && info.Serializer != nil {
			info.Serializer = rowEncoder{info.Serializer}
		}
		out[i] = info
	}
	return out
}

// rowEncoder writes a Table row by row, anything else as its serializer
// does.
type rowEncoder struct {
	runtime.Serializer
}

func (e rowEncoder) Encode(obj runtime.Object, w io.Writer) error {
	t, ok := obj.(*metav1.Table)
	if !ok || len(t.Rows) == 0 {
		return e.Serializer.Encode(obj, w)
	}
	return encodeRows(t, w)
}

// rowsNull is how the Table without rows ends in JSON.
var rowsNull = []byte(`"rows":null}`)

// encodeRows writes t as json.Encoder writes it: its other fields, then
// each row marshalled alone, then a newline.
func encodeRows(t *metav1.Table, w io.Writer) error {
	head := *t
	head.Rows = nil
	data, err := json.Marshal(&head)
	if err != nil {
		return err
	}
	data, ok := bytes.CutSuffix(data, rowsNull)
	if !ok {
		// Not the layout this writes after; never with metav1.Table.
		return json.NewEncoder(w).Encode(t)
	}
	buf := bytes.NewBuffer(append(data, `"rows":[`...))
	for i := range t.Rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		row, err := json.Marshal(&t.Rows[i])
		if err != nil {
			return err
		}
		buf.Write(row)
		// Write out what gathered, so that the buffer stays small.
		if buf.Len() >= 32<<10 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
	}
	buf.WriteString("]}\n")
	_, err = w.Write(buf.Bytes())
	return err
}
