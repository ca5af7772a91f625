// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
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
	"time"

	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// Reader reads recordings and request logs back.
type Reader struct {
	Store store.Store
	// Keys verify the manifests and live marks of recordings.
	Keys *ManifestKeys
	// Clock tells a live mark that is recent from one a stopped writer
	// left; nil is the real clock.
	Clock clock.PassiveClock
	// FollowPoll is how often Follow and FollowRequests look for what was
	// stored since; 0 is DefaultFollowPoll.
	FollowPoll time.Duration
	// Replica names this replica as the Recorder does; with OwnOnly, a
	// stream another replica records is said to be out of reach.
	Replica string
	// OwnOnly says that the store holds only what this replica wrote (the
	// local directory store), so that it cannot serve, or follow, the
	// streams of other replicas.
	OwnOnly bool
	// Flush, when set, writes this replica's unwritten request log lines of
	// a session (Recorder.FlushRequests) before Requests reads its first
	// page, so that a history read right after a request includes it.
	Flush func(ctx context.Context, namespace, name string)
}

// ErrNoStream is returned for a stream a session does not have.
var ErrNoStream = errors.New("no such recorded stream")

// Streams lists the recorded streams of every session named name in
// namespace, the current one and those deleted within retention, by start.
func (r Reader) Streams(ctx context.Context, namespace, name string) ([]v1alpha1.SessionRecording, error) {
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	byStream := map[string]*v1alpha1.SessionRecording{}
	var order []string
	for _, o := range objects {
		dir, object, ok := streamObject(o.Key)
		if !ok {
			continue
		}
		s := byStream[dir]
		if s == nil {
			s = &v1alpha1.SessionRecording{}
			byStream[dir] = s
			order = append(order, dir)
		}
		switch {
		case object == infoObject:
			if err := r.readJSON(ctx, o.Key, &s.RecordingInfo); err != nil {
				return nil, err
			}
		case object == manifestObject:
			s.Manifest = &v1alpha1.RecordingManifest{}
			if err := r.readJSON(ctx, o.Key, s.Manifest); err != nil {
				return nil, err
			}
		case strings.HasPrefix(object, chunkPrefix):
			s.Bytes += o.Size
		}
	}
	summaries := make([]v1alpha1.SessionRecording, 0, len(order))
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

// ErrNotAsWritten says that a recording is not vouched for by its writer:
// its chunks or info are not those its manifest describes (changed, added
// or removed since), or it has no manifest signed with a key the server
// holds and is not live.
var ErrNotAsWritten = errors.New("the recording is not what was written")

// Cast is a recorded stream, found and checked, to be written as an
// asciicast file.
type Cast struct {
	store    store.Store
	info     v1alpha1.RecordingInfo
	dir      string
	chunks   []string
	manifest *v1alpha1.RecordingManifest
	// infoSHA256 is the digest of info.json as read, which a manifest
	// must name.
	infoSHA256 string
	// checked is set when the chunks were verified against the manifest,
	// so that Write checks them again as it reads them.
	checked      bool
	verification string
}

// Verification says what OpenCast verified: v1alpha1.RecordingVerified,
// v1alpha1.RecordingLive, or v1alpha1.RecordingUnverifiedPrefix and why
// not.
func (c *Cast) Verification() string { return c.verification }

// OpenCast finds a stream of a session named name and checks that its
// writer vouches for it: a finished recording needs a manifest signed with
// one of the Reader's keys that describes its info and its chunks, read
// one chunk at a time, so that a recording is checked before any of it is
// written, whatever its length; one without a manifest must be live (a
// live mark signed within liveGrace). Otherwise it returns
// ErrNotAsWritten, unless unverified asks for the recording anyway: then
// the Cast says why it is not verified.
func (r Reader) OpenCast(ctx context.Context, namespace, name, stream string, unverified bool) (*Cast, error) {
	if store.CheckKey(stream) != nil || strings.Contains(stream, "/") {
		return nil, ErrNoStream
	}
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return nil, err
	}
	var info, manifest, live []string
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
		case object == liveObject:
			live = append(live, o.Key)
		case strings.HasPrefix(object, chunkPrefix):
			c.chunks = append(c.chunks, o.Key)
		}
	}
	if len(info) != 1 || len(manifest) > 1 || len(live) > 1 {
		return nil, ErrNoStream
	}
	c.dir = strings.TrimSuffix(info[0], infoObject)
	infoData, err := r.Store.Get(ctx, info[0])
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(infoData, &c.info); err != nil {
		return nil, fmt.Errorf("%s: %w", info[0], err)
	}
	infoSum := sha256.Sum256(infoData)
	c.infoSHA256 = hex.EncodeToString(infoSum[:])
	c.verification, err = r.verify(ctx, c, manifest, live)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotAsWritten) && unverified:
		c.checked, c.verification = false, v1alpha1.RecordingUnverifiedPrefix+err.Error()
	default:
		return nil, err
	}
	return c, nil
}

// verify checks what the recording's writer signed of it; refusals wrap
// ErrNotAsWritten, other errors are the store's.
func (r Reader) verify(ctx context.Context, c *Cast, manifest, live []string) (string, error) {
	if len(manifest) == 0 {
		if len(live) == 0 {
			return "", fmt.Errorf("%s: %w: it has no manifest and its writer never said that it is live", c.dir, ErrNotAsWritten)
		}
		if err := r.checkLive(ctx, c.dir, live[0]); err != nil {
			return "", err
		}
		return v1alpha1.RecordingLive, nil
	}
	var err error
	if c.manifest, err = r.readManifest(ctx, c, manifest[0]); err != nil {
		return "", err
	}
	d := c.digest(ctx)
	for i := range c.chunks {
		if _, err := d.chunk(i); err != nil {
			return "", fmt.Errorf("%s: %w", c.dir, err)
		}
	}
	if err := d.check(); err != nil {
		return "", err
	}
	c.checked = true
	return v1alpha1.RecordingVerified, nil
}

// checkLive checks the live mark at key of the recording under dir: signed
// by its writer within liveGrace. Refusals wrap ErrNotAsWritten.
func (r Reader) checkLive(ctx context.Context, dir, key string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", dir, ErrNotAsWritten, fmt.Sprintf(format, args...))
	}
	var mark liveMark
	if err := r.readJSON(ctx, key, &mark); err != nil {
		return refuse("its live mark cannot be read: %v", err)
	}
	if err := r.Keys.verify(mark.Key, mark.MAC, mark.signedBytes(dir)); err != nil {
		return refuse("it has no manifest, and its live mark: %v", err)
	}
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if age := clk.Since(mark.Time); age > liveGrace {
		return refuse("it has no manifest, and its writer last said that it is live %s ago: it stopped without one, or the manifest was removed",
			age.Round(time.Second))
	}
	return nil
}

// readManifest reads the manifest at key of c and checks its signature and
// that it describes c's info. Refusals wrap ErrNotAsWritten, other errors
// are the store's.
func (r Reader) readManifest(ctx context.Context, c *Cast, key string) (*v1alpha1.RecordingManifest, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", c.dir, ErrNotAsWritten, fmt.Sprintf(format, args...))
	}
	data, err := r.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	m := &v1alpha1.RecordingManifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, refuse("its manifest cannot be read: %v", err)
	}
	if err := r.Keys.verify(m.Key, m.MAC, manifestSignedBytes(m, c.dir)); err != nil {
		return nil, refuse("its manifest: %v", err)
	}
	if m.Stream != c.info.Stream || m.InfoSHA256 != c.infoSHA256 {
		return nil, refuse("its info is not what its manifest describes")
	}
	return m, nil
}

// Write writes the asciicast to w, built one chunk at a time; its header
// says what was verified. The chunks of a verified recording are checked
// again as they are read: an error after the first write means that what
// w got must not be taken for the recording.
func (c *Cast) Write(ctx context.Context, w io.Writer) error {
	d := c.digest(ctx)
	if err := renderCast(&castWriter{info: c.info, verification: c.verification}, len(c.chunks), d.chunk, w); err != nil {
		return fmt.Errorf("%s: %w", c.dir, err)
	}
	if c.checked {
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
	d.add(chunk)
	return chunk, err
}

// add takes note of a chunk read.
func (d *castDigest) add(chunk []byte) {
	d.sum.Write(chunk)
	d.length += int64(len(chunk))
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
