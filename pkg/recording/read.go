// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/clustergate/clustergate/pkg/recording/store"
)

// StreamSummary describes a recorded stream as listed: its info, and its
// manifest once finished (nil while it runs, or when the replica that
// recorded it stopped first).
type StreamSummary struct {
	StreamInfo `json:",inline"`
	// Bytes is what is stored of the recording: its chunks.
	Bytes    int64     `json:"bytes"`
	Manifest *Manifest `json:"manifest,omitempty"`
}

// Reader reads recordings and request logs back.
type Reader struct {
	Store store.Store
}

// ErrNoStream is returned for a stream a session does not have.
var ErrNoStream = errors.New("no such recorded stream")

// Streams lists the recorded streams of every session named name in
// namespace, the current one and those deleted within retention, by start.
func (r Reader) Streams(ctx context.Context, namespace, name string) ([]StreamSummary, error) {
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	byStream := map[string]*StreamSummary{}
	var order []string
	for _, o := range objects {
		dir, object, ok := streamObject(o.Key)
		if !ok {
			continue
		}
		s := byStream[dir]
		if s == nil {
			s = &StreamSummary{}
			byStream[dir] = s
			order = append(order, dir)
		}
		switch {
		case object == infoObject:
			if err := r.readJSON(ctx, o.Key, &s.StreamInfo); err != nil {
				return nil, err
			}
		case object == manifestObject:
			s.Manifest = &Manifest{}
			if err := r.readJSON(ctx, o.Key, s.Manifest); err != nil {
				return nil, err
			}
		case strings.HasPrefix(object, chunkPrefix):
			s.Bytes += o.Size
		}
	}
	summaries := make([]StreamSummary, 0, len(order))
	for _, dir := range order {
		if s := byStream[dir]; s.Stream != "" {
			summaries = append(summaries, *s)
		}
	}
	sort.SliceStable(summaries, func(i, j int) bool { return summaries[i].StartTime.Before(summaries[j].StartTime) })
	return summaries, nil
}

// streamObject splits a key <ns>/<name>/<uid>/streams/<id>/<object>.
func streamObject(key string) (dir, object string, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 6 || parts[3] != streamsDir {
		return "", "", false
	}
	return strings.Join(parts[:5], "/"), parts[5], true
}

func (r Reader) readJSON(ctx context.Context, key string, into any) error {
	data, err := r.Store.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// ErrNotAsWritten says that a recording's chunks are not those its
// manifest describes: they were changed, added or removed since.
var ErrNotAsWritten = errors.New("the recording is not what was written")

// Cast returns the asciicast file of a stream of a session named name,
// built from its chunks. Once the recording is finished, the chunks must
// be those its manifest describes (ErrNotAsWritten otherwise).
func (r Reader) Cast(ctx context.Context, namespace, name, stream string) ([]byte, error) {
	if store.CheckKey(stream) != nil || strings.Contains(stream, "/") {
		return nil, ErrNoStream
	}
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	var info, manifest, chunks []string
	for _, o := range objects {
		dir, object, ok := streamObject(o.Key)
		if !ok || !strings.HasSuffix(dir, "/"+stream) {
			continue
		}
		switch {
		case object == infoObject:
			info = append(info, o.Key)
		case object == manifestObject:
			manifest = append(manifest, o.Key)
		case strings.HasPrefix(object, chunkPrefix):
			chunks = append(chunks, o.Key)
		}
	}
	if len(info) != 1 || len(manifest) > 1 {
		return nil, ErrNoStream
	}
	dir := strings.TrimSuffix(info[0], infoObject)
	cast := &castWriter{}
	if err := r.readJSON(ctx, info[0], &cast.info); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	sum, length := sha256.New(), int64(0)
	err = renderCast(cast, len(chunks), func(i int) ([]byte, error) {
		chunk, err := r.Store.Get(ctx, chunks[i])
		sum.Write(chunk)
		length += int64(len(chunk))
		return chunk, err
	}, &out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(manifest) == 1 {
		var m Manifest
		if err := r.readJSON(ctx, manifest[0], &m); err != nil {
			return nil, err
		}
		if got := hex.EncodeToString(sum.Sum(nil)); m.Chunks != len(chunks) || m.CaptureLength != length || m.CaptureSHA256 != got {
			return nil, fmt.Errorf("%s: %w: %d chunks, %d bytes, sha256 %s; its manifest says %d, %d, %s",
				dir, ErrNotAsWritten, len(chunks), length, got, m.Chunks, m.CaptureLength, m.CaptureSHA256)
		}
	}
	return out.Bytes(), nil
}

// Requests returns the request log of every session named name in
// namespace, from every replica, by time.
func (r Reader) Requests(ctx context.Context, namespace, name string) ([]Request, error) {
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	var requests []Request
	for _, o := range objects {
		parts := strings.Split(o.Key, "/")
		if len(parts) != 5 || parts[3] != requestsDir {
			continue
		}
		data, err := r.Store.Get(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		scanner := bufio.NewScanner(bytes.NewReader(data))
		scanner.Buffer(nil, 1<<20)
		for scanner.Scan() {
			var req Request
			if json.Unmarshal(scanner.Bytes(), &req) == nil {
				requests = append(requests, req)
			}
		}
	}
	sort.SliceStable(requests, func(i, j int) bool { return requests[i].Time.Before(requests[j].Time) })
	return requests, nil
}
