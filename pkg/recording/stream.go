// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// Stream is the recording of one interactive stream. The relay hands it
// every byte with FromClient and ToClient, which append them, with their
// time, to the chunk being captured (the capture format): on the stream's
// path a recording costs a copy. Its own goroutine writes the chunk every
// FlushInterval, or sooner once chunkBytes are captured, and checks on the
// way that the stream decodes, so that a stream the recording cannot
// follow fails it; when the chunk outgrows QueueBytes, as when the store
// is slower than the stream, the relay waits for it, so a stream never
// outruns its recording (a write to the store is bounded by its timeout,
// after which the recording fails and stops holding the stream). The
// chunks are hashed as they are written, so Close finishes a recording
// with its manifest without reading it back.
type Stream struct {
	recorder *Recorder
	info     v1alpha1.RecordingInfo
	prefix   string

	mu sync.Mutex
	// chunk is what the relay carried since the recording last took it;
	// queued is its length.
	chunk  []byte
	queued int
	// nextSize is what a new chunk is made to hold: what the last one
	// held, so that a fast stream does not grow each chunk anew. spare is
	// the buffer of the last chunk written, for the next one; a stream
	// that captured nothing in a FlushInterval gives it back to the pool.
	nextSize int
	spare    []byte
	// answer collects the target's answer to the upgrade until its end;
	// answered is set then, and capturing is cleared when the target did
	// not switch protocols: there is no stream to record.
	answer    []byte
	answered  bool
	capturing bool
	// space is signalled when the chunk was taken, or waiting ends.
	space  *sync.Cond
	closed bool
	// failed is why the recording stopped, once it did; onFail is told.
	failed error
	onFail func(error)

	// Only the recording's goroutine touches these: the chunks written,
	// their length and digest, and the decoder that checks the stream as
	// they are; notUpgraded is set when the target did not switch
	// protocols.
	chunks        int
	captureLength int64
	captureSum    hash.Cloner
	checker       decoder
	notUpgraded   bool
	// infoSHA256 is the digest of the info.json written at open.
	infoSHA256 string
	// moderation follows the moderators of a moderated stream
	// (WatchModerators); nil for the rest. mu guards it.
	moderation *moderators

	wake, closing, done chan struct{}
}

// ID identifies the stream within its session.
func (s *Stream) ID() string { return s.info.Stream }

// Recording says whether the stream is being recorded.
func (s *Stream) Recording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed == nil
}

// OnFailure sets what to do when the recording fails while the stream
// runs; under ModeRequired it is told, with a *Failure, from the
// recording's goroutine; under best-effort never.
func (s *Stream) OnFailure(f func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onFail = f
}

// FromClient records bytes the client sent to the target.
func (s *Stream) FromClient(b []byte) { s.tap(true, b) }

// ToClient records bytes the target sent to the client.
func (s *Stream) ToClient(b []byte) { s.tap(false, b) }

func (s *Stream) tap(fromClient bool, b []byte) {
	if len(b) == 0 {
		return
	}
	at := s.recorder.cfg.Clock.Since(s.info.StartTime)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.queued > 0 && s.queued+len(b) > s.recorder.cfg.QueueBytes && !s.closed && s.failed == nil {
		s.space.Wait()
	}
	if s.closed || s.failed != nil || !s.capturing {
		return
	}
	if !fromClient && !s.answered {
		s.takeAnswer(at, b)
		return
	}
	s.capture(at, fromClient, b)
}

// takeAnswer collects the target's answer to the upgrade and captures what
// the recording keeps of it, and what follows it.
func (s *Stream) takeAnswer(at time.Duration, b []byte) {
	s.answer = append(s.answer, b...)
	end := bytes.Index(s.answer, []byte("\r\n\r\n"))
	if end < 0 {
		if len(s.answer) > maxResponseHeader {
			s.answered, s.capturing, s.answer = true, false, nil
			s.capture(at, false, []byte(unreadableAnswer))
		}
		return
	}
	kept, upgraded := keptAnswer(s.answer[:end+4])
	s.capture(at, false, kept)
	if rest := s.answer[end+4:]; upgraded && len(rest) > 0 {
		s.capture(at, false, rest)
	}
	s.answered, s.capturing, s.answer = true, upgraded, nil
}

// capture appends a record to the chunk, in a larger buffer when it does
// not fit, and wakes the recording once the chunk is due to be written.
func (s *Stream) capture(at time.Duration, fromClient bool, b []byte) {
	need := len(s.chunk) + len(captureMagic) + recordHeaderMax + len(b)
	if s.chunk == nil && cap(s.spare) >= max(need, s.nextSize) {
		s.chunk, s.spare = s.spare, nil
	}
	if need > cap(s.chunk) {
		grown := getChunkBuffer(max(need, s.nextSize, 4*cap(s.chunk)))
		grown = append(grown, s.chunk...)
		putChunkBuffer(s.chunk)
		s.chunk = grown
	}
	if len(s.chunk) == 0 {
		s.chunk = append(s.chunk, captureMagic...)
	}
	s.chunk = appendRecord(s.chunk, at, fromClient, b)
	s.queued += len(b)
	if len(s.chunk) >= chunkBytes {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Close finishes the recording: what is captured is written and the
// manifest follows, from the recording's own goroutine. Wait waits for
// that.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.closing)
		s.space.Broadcast()
	}
}

// Wait returns once the recording is finished.
func (s *Stream) Wait() { <-s.done }

// run writes what the relay captured every FlushInterval, and whenever
// chunkBytes are captured, until Close.
func (s *Stream) run() {
	defer close(s.done)
	ticker := s.recorder.cfg.Clock.NewTicker(s.recorder.cfg.FlushInterval)
	defer ticker.Stop()
	live := s.recorder.cfg.Clock.NewTicker(liveInterval)
	defer live.Stop()
	s.writeLive()
	for {
		select {
		case <-s.wake:
			s.writeChunk(false)
		case <-ticker.C():
			s.writeChunk(false)
		case <-live.C():
			s.writeLive()
		case <-s.closing:
			s.writeChunk(true)
			s.finish()
			return
		}
	}
}

// chunkBytes is the size at which a chunk is written before its
// FlushInterval: a fast stream does not pile up in memory. It leaves room
// in a buffer of 4 MiB, a size class, for the reads that come while the
// chunk is being taken.
const chunkBytes = 3 << 20

// writeChunk takes the chunk the relay captured, checks that it decodes
// and writes it. The last chunk is written even when empty: it tells
// the asciicast that the stream ended there.
func (s *Stream) writeChunk(last bool) {
	s.mu.Lock()
	chunk, failed := s.chunk, s.failed != nil
	s.chunk, s.queued, s.nextSize = nil, 0, len(chunk)
	if len(chunk) == 0 || last || failed {
		putChunkBuffer(s.spare)
		s.spare = nil
	}
	s.space.Broadcast()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.spare == nil && !last {
			s.spare = chunk[:0]
		} else {
			putChunkBuffer(chunk)
		}
	}()
	if failed || (len(chunk) == 0 && !last) {
		return
	}
	if len(chunk) == 0 {
		chunk = append(chunk, captureMagic...)
	}
	// The store writes while the chunk is checked and hashed: the
	// recording keeps up with a faster stream.
	put := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		put <- s.recorder.cfg.Store.Put(ctx, chunkKey(s.prefix, s.chunks+1), chunk)
	}()
	decodeErr := readCapture(chunk, func(_ time.Duration, fromClient bool, data []byte) error {
		err := s.checker.feed(fromClient, data, nil)
		if errors.Is(err, errNotUpgraded) {
			s.notUpgraded = true
			return nil
		}
		return err
	})
	// crypto/sha256's Clone never fails.
	unhashed, _ := s.captureSum.Clone()
	s.captureSum.Write(chunk)
	if err := <-put; err != nil {
		// The manifest describes the chunks written.
		s.captureSum = unhashed
		writeFailures.Inc()
		s.fail(fmt.Errorf("a chunk could not be written: %w", err))
		return
	}
	s.chunks++
	s.captureLength += int64(len(chunk))
	writtenBytes.Add(float64(len(chunk)))
	if decodeErr != nil {
		s.fail(fmt.Errorf("the stream could not be decoded: %w", decodeErr))
	}
}

// writeLive signs that the recording is live now, so that a reader serves
// it without a manifest while it runs; a stream idle for hours stays
// live. Without keys there is nothing to sign.
func (s *Stream) writeLive() {
	r := s.recorder
	if r.cfg.Keys == nil {
		return
	}
	mark := liveMark{Time: r.cfg.Clock.Now()}
	mark.Key, mark.MAC = r.cfg.Keys.sign(mark.signedBytes(s.prefix))
	data, _ := json.Marshal(mark)
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.cfg.Store.Put(ctx, s.prefix+liveObject, data); err != nil {
		writeFailures.Inc()
		klog.ErrorS(err, "Recording's live mark not written", "session", klog.KRef(s.info.Namespace, s.info.Name), "stream", s.info.Stream)
	}
}

// finish writes the manifest: the length and digest of the chunks as
// written, and of the info, how the recording ended, signed.
func (s *Stream) finish() {
	r := s.recorder
	m := v1alpha1.RecordingManifest{Stream: s.info.Stream, Protocol: s.checker.Protocol(), EndTime: r.cfg.Clock.Now(),
		Chunks: s.chunks, CaptureLength: s.captureLength, CaptureSHA256: hex.EncodeToString(s.captureSum.Sum(nil)), InfoSHA256: s.infoSHA256}
	if s.notUpgraded {
		m.Failed = errNotUpgraded.Error()
	}
	s.mu.Lock()
	if s.failed != nil {
		m.Failed = s.failed.Error()
	}
	if s.moderation != nil {
		s.moderation.close(m.EndTime)
		m.Moderators = slices.Clone(s.moderation.periods)
	}
	s.mu.Unlock()
	m.Key, m.MAC = r.cfg.Keys.sign(manifestSignedBytes(&m, s.prefix))
	data, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.cfg.Store.Put(ctx, s.prefix+manifestObject, data); err != nil {
		writeFailures.Inc()
		klog.ErrorS(err, "Recording manifest not written", "session", klog.KRef(s.info.Namespace, s.info.Name), "stream", s.info.Stream)
	}
}

// fail records why the recording stopped, once, and tells the relay under
// ModeRequired; under best-effort capturing stops but written chunks
// stay.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	if s.failed != nil {
		s.mu.Unlock()
		return
	}
	s.failed = err
	onFail := s.onFail
	s.space.Broadcast()
	s.mu.Unlock()
	failedStreams.Inc()
	klog.ErrorS(err, "Recording failed", "session", klog.KRef(s.info.Namespace, s.info.Name), "stream", s.info.Stream,
		"policy", s.recorder.cfg.Mode)
	outcome := sessionevents.StreamUnrecorded
	if s.recorder.Required() {
		outcome = sessionevents.StreamEnded
	}
	s.recorder.reportFailure(s.info, outcome)
	if s.recorder.Required() && onFail != nil {
		onFail(&Failure{Err: fmt.Errorf("recording required: %w", err), SPDYErrorStream: s.checker.spdyErrorStream()})
	}
}

// Failure is what OnFailure is told when a recording fails under
// ModeRequired: why, and what the relay needs to tell the client so.
type Failure struct {
	Err error
	// SPDYErrorStream is the SPDY stream (streamType "error") on which the
	// client reads how the command ended, where the relay can say why the
	// stream ends; 0 when the stream is not SPDY or the client opened none.
	SPDYErrorStream uint32
}

func (f *Failure) Error() string { return f.Err.Error() }

func (f *Failure) Unwrap() error { return f.Err }
