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
	"hash"
	"io"
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

// Cast is a recorded stream, found and checked, to be written as an
// asciicast file.
type Cast struct {
	store    store.Store
	info     StreamInfo
	dir      string
	chunks   []string
	manifest *Manifest
}

// OpenCast finds a stream of a session named name and, once its recording
// is finished, checks that its chunks are those its manifest describes
// (ErrNotAsWritten otherwise), reading one chunk at a time: a recording
// is checked before any of it is written, whatever its length.
func (r Reader) OpenCast(ctx context.Context, namespace, name, stream string) (*Cast, error) {
	if store.CheckKey(stream) != nil || strings.Contains(stream, "/") {
		return nil, ErrNoStream
	}
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	var info, manifest []string
	c := &Cast{store: r.Store}
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
			c.chunks = append(c.chunks, o.Key)
		}
	}
	if len(info) != 1 || len(manifest) > 1 {
		return nil, ErrNoStream
	}
	c.dir = strings.TrimSuffix(info[0], infoObject)
	if err := r.readJSON(ctx, info[0], &c.info); err != nil {
		return nil, err
	}
	if len(manifest) == 1 {
		c.manifest = &Manifest{}
		if err := r.readJSON(ctx, manifest[0], c.manifest); err != nil {
			return nil, err
		}
		d := c.digest(ctx)
		for i := range c.chunks {
			if _, err := d.chunk(i); err != nil {
				return nil, fmt.Errorf("%s: %w", c.dir, err)
			}
		}
		if err := d.check(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Write writes the asciicast to w, built one chunk at a time. The chunks
// are checked again as they are read: an error after the first write
// means that what w got must not be taken for the recording.
func (c *Cast) Write(ctx context.Context, w io.Writer) error {
	d := c.digest(ctx)
	if err := renderCast(&castWriter{info: c.info}, len(c.chunks), d.chunk, w); err != nil {
		return fmt.Errorf("%s: %w", c.dir, err)
	}
	if c.manifest != nil {
		return d.check()
	}
	return nil
}

// castDigest reads a recording's chunks and takes their length and
// digest on the way.
type castDigest struct {
	ctx    context.Context
	cast   *Cast
	sum    hash.Hash
	length int64
}

func (c *Cast) digest(ctx context.Context) *castDigest {
	return &castDigest{ctx: ctx, cast: c, sum: sha256.New()}
}

func (d *castDigest) chunk(i int) ([]byte, error) {
	chunk, err := d.cast.store.Get(d.ctx, d.cast.chunks[i])
	d.sum.Write(chunk)
	d.length += int64(len(chunk))
	return chunk, err
}

// check compares what was read with the manifest.
func (d *castDigest) check() error {
	m := d.cast.manifest
	if got := hex.EncodeToString(d.sum.Sum(nil)); m.Chunks != len(d.cast.chunks) || m.CaptureLength != d.length || m.CaptureSHA256 != got {
		return fmt.Errorf("%s: %w: %d chunks, %d bytes, sha256 %s; its manifest says %d, %d, %s",
			d.cast.dir, ErrNotAsWritten, len(d.cast.chunks), d.length, got, m.Chunks, m.CaptureLength, m.CaptureSHA256)
	}
	return nil
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
