// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// ErrBadContinue is returned for a continue token that Requests did not
// make.
var ErrBadContinue = errors.New("invalid continue token")

// requestsPosition is where a page of the request log ends: the entry at
// Index of the chunk written at Modified under Key (a continue token).
type requestsPosition struct {
	Modified int64  `json:"m"`
	Key      string `json:"k"`
	Index    int    `json:"i"`
}

// before orders chunks as Requests reads them: by when they were written,
// then by key.
func (p requestsPosition) before(o store.Object) bool {
	m := o.Modified.UnixNano()
	return p.Modified < m || p.Modified == m && p.Key < o.Key
}

// Requests hands each entry of the request log of every session named
// name in namespace, from every replica, to each: chunk by chunk in the
// order they were written (a flush of a replica's log every
// FlushInterval), and by time within a chunk. It holds one chunk at a
// time, whatever the log's length. With limit > 0 it stops after limit
// entries and returns the token that continues after them (empty at the
// end of the log). A chunk or line it cannot read is an error: no entry
// is skipped.
func (r Reader) Requests(ctx context.Context, namespace, name string, limit int, continueToken string, each func(*v1alpha1.RequestLogEntry) error) (string, error) {
	var from *requestsPosition
	if continueToken != "" {
		data, err := base64.RawURLEncoding.DecodeString(continueToken)
		from = &requestsPosition{}
		if err != nil || json.Unmarshal(data, from) != nil || from.Key == "" || from.Index < 0 {
			return "", ErrBadContinue
		}
	} else if r.Flush != nil {
		r.Flush(ctx, namespace, name)
	}
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return "", err
	}
	chunks := requestChunks(objects, func(o store.Object) bool { return from == nil || from.Key == o.Key || from.before(o) })
	sent := 0
	for _, o := range chunks {
		start := 0
		if from != nil && from.Key == o.Key {
			start = from.Index
		}
		lines, err := r.requestChunk(ctx, o.Key)
		if err != nil {
			return "", err
		}
		for i := start; i < len(lines); i++ {
			if limit > 0 && sent == limit {
				return encodePosition(requestsPosition{Modified: o.Modified.UnixNano(), Key: o.Key, Index: i}), nil
			}
			var req v1alpha1.RequestLogEntry
			if err := json.Unmarshal(lines[i].data, &req); err != nil {
				return "", fmt.Errorf("%s, line %d: %w", o.Key, lines[i].n, err)
			}
			if err := each(&req); err != nil {
				return "", err
			}
			sent++
		}
	}
	return "", nil
}

// requestChunks picks the chunks of a request log that keep takes from a
// session's objects, in the order they were written.
func requestChunks(objects []store.Object, keep func(store.Object) bool) []store.Object {
	var chunks []store.Object
	for _, o := range objects {
		parts := strings.Split(o.Key, "/")
		if len(parts) == 5 && parts[3] == requestsDir && keep(o) {
			chunks = append(chunks, o)
		}
	}
	sort.Slice(chunks, func(i, j int) bool {
		return requestsPosition{Modified: chunks[i].Modified.UnixNano(), Key: chunks[i].Key}.before(chunks[j])
	})
	return chunks
}

func encodePosition(p requestsPosition) string {
	data, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(data)
}

// requestLine is line n of a chunk of a request log, written at time.
type requestLine struct {
	time time.Time
	n    int
	data []byte
}

// requestChunk reads a chunk of a request log and sorts its lines by
// time, reading no more of each than its time: a page decodes only the
// entries it holds.
func (r Reader) requestChunk(ctx context.Context, key string) ([]requestLine, error) {
	data, err := r.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	lines := make([]requestLine, 0, bytes.Count(data, []byte{'\n'})+1)
	for n := 1; len(data) > 0; n++ {
		line := requestLine{n: n, data: data}
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line.data, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if line.time, err = lineTime(line.data); err != nil {
			return nil, fmt.Errorf("%s, line %d: %w", key, n, err)
		}
		lines = append(lines, line)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].time.Before(lines[j].time) })
	return lines, nil
}

// lineTime reads the time of a request log line, which appendRequest
// writes first.
func lineTime(line []byte) (time.Time, error) {
	const prefix = `{"time":"`
	if rest, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 {
			if t, err := time.Parse(time.RFC3339Nano, string(rest[:end])); err == nil {
				return t, nil
			}
		}
	}
	var entry struct {
		Time time.Time `json:"time"`
	}
	err := json.Unmarshal(line, &entry)
	return entry.Time, err
}
