// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// DefaultFollowPoll is how often a follower looks for what the writer
// stored since: a byte reaches a follower at most FlushInterval +
// DefaultFollowPoll (and a write and a read of the store) after the relay
// carried it. Each look at a live stream is a read of the store (a GET on
// S3) per follower, and one of its manifest while no chunk is new; at a
// request log, one list.
const DefaultFollowPoll = 250 * time.Millisecond

func (r Reader) followPoll() time.Duration {
	if r.FollowPoll > 0 {
		return r.FollowPoll
	}
	return DefaultFollowPoll
}

// Follow writes the asciicast of c to w as Cast.Write does and, while the
// stream is live, each chunk as its writer stores it, calling flush after
// every write, until the stream ends: once its manifest is there, signed
// and describing every chunk followed, a marker event says that the
// recording is verified (or incomplete, and why, when its manifest says
// so). A manifest that is unsigned, signed with a key the server does not
// hold, or does not describe what was followed, and a writer that stopped
// without one, end it after a marker event that says why, with an error
// that wraps ErrNotAsWritten. When ctx ends it returns ctx's error.
func (r Reader) Follow(ctx context.Context, c *Cast, w io.Writer, flush func()) error {
	if c.verification != v1alpha1.RecordingLive {
		err := c.Write(ctx, w)
		flush()
		return err
	}
	followers.Inc()
	defer followers.Dec()
	cw := &castWriter{info: c.info, verification: c.verification,
		// A follower's chunks are those of a few seconds: its buffer
		// grows as they need, not to a replay's size.
		buf: make([]byte, 0, 4<<10)}
	d := c.digest(ctx)
	c.chunks = nil
	lastLive := time.Now()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
		}
		if err := r.followChunks(ctx, c, cw, d, w, flush); err != nil {
			return err
		}
		m, err := r.readManifest(ctx, c, c.dir+manifestObject)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if time.Since(lastLive) >= liveInterval {
				if err := r.checkLive(ctx, c.dir, c.dir+liveObject); err != nil {
					return endFollow(cw, 0, "follow ended: "+err.Error(), err, w, flush)
				}
				lastLive = time.Now()
			}
		case errors.Is(err, ErrNotAsWritten):
			return endFollow(cw, 0, "follow ended: "+err.Error(), err, w, flush)
		case err != nil:
			return err
		case m.Chunks > len(c.chunks):
			// Chunks stored before the manifest, read at the next look.
		default:
			c.manifest = m
			at := m.EndTime.Sub(c.info.StartTime)
			if err := d.check(); err != nil {
				return endFollow(cw, at, "follow ended: "+err.Error(), err, w, flush)
			}
			end := "recording ended and verified: its signed manifest describes every chunk followed"
			if m.Failed != "" {
				end = "recording ended incomplete: " + m.Failed + "; its signed manifest describes every chunk followed"
			}
			return endFollow(cw, at, end, nil, w, flush)
		}
		wait.Reset(r.followPoll())
	}
}

// followChunks writes every chunk of c stored after those followed.
func (r Reader) followChunks(ctx context.Context, c *Cast, cw *castWriter, d *castDigest, w io.Writer, flush func()) error {
	for {
		key := chunkKey(c.dir, len(c.chunks)+1)
		data, err := c.store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		c.chunks = append(c.chunks, key)
		d.add(data)
		if err := cw.renderChunk(len(c.chunks)-1, data, false, w); err != nil {
			return fmt.Errorf("%s: %w", c.dir, err)
		}
		flush()
	}
}

// endFollow writes a marker event at, that says how the follow ended, and
// what the stream left incomplete; it returns err.
func endFollow(cw *castWriter, at time.Duration, text string, err error, w io.Writer, flush func()) error {
	cw.event(at, event{kind: kindMarker, data: []byte(text)})
	if werr := cw.writePending(true, w); werr != nil && err == nil {
		err = werr
	}
	flush()
	return err
}

// FollowRequests hands each entry of the request log of every session
// named name in namespace to each, as Requests does, then every entry
// written since as its chunk is stored, calling flush after each look,
// until ctx ends: then it returns ctx's error. It keeps the keys of the
// chunks it read, not their entries.
func (r Reader) FollowRequests(ctx context.Context, namespace, name string, each func(*v1alpha1.RequestLogEntry) error, flush func()) error {
	followers.Inc()
	defer followers.Dec()
	read := map[string]bool{}
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
		}
		objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
		if err != nil {
			return err
		}
		for _, o := range requestChunks(objects, func(o store.Object) bool { return !read[o.Key] }) {
			lines, err := r.requestChunk(ctx, o.Key)
			if err != nil {
				return err
			}
			for _, line := range lines {
				var req v1alpha1.RequestLogEntry
				if err := json.Unmarshal(line.data, &req); err != nil {
					return fmt.Errorf("%s, line %d: %w", o.Key, line.n, err)
				}
				if err := each(&req); err != nil {
					return err
				}
			}
			read[o.Key] = true
		}
		flush()
		wait.Reset(r.followPoll())
	}
}

// OutOfReach says why this replica cannot read stream, when its store
// holds only what this replica wrote and the stream's ID names another
// replica; "" otherwise.
func (r Reader) OutOfReach(stream string) string {
	if !r.OwnOnly {
		return ""
	}
	recordedBy := StreamReplica(stream)
	if recordedBy == "" || recordedBy == keySafe(r.Replica) {
		return ""
	}
	return fmt.Sprintf("stream %s is recorded by replica %s, and this replica (%s) keeps recordings on its own disk (the local store): "+
		"only the replica that records a stream reads it; reading and following streams from any replica needs the S3 store (--recording-s3-endpoint)",
		stream, recordedBy, r.Replica)
}

// StreamReplica is the replica named in a stream's ID (as newStreamID
// makes it: start, replica, random suffix), "" when it names none.
func StreamReplica(stream string) string {
	const startLen = len("20060102T150405Z-")
	if len(stream) < startLen+9 {
		return ""
	}
	rest := stream[startLen:]
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return ""
	}
	return rest[:i]
}
