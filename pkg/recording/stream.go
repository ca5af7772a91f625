// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Stream is the recording of one interactive stream. The relay hands it
// every byte with FromClient and ToClient, which copy into a bounded
// queue, blocks from a pool that the recording's goroutine gives back once
// it decoded them, so that neither side waits for the other while the
// recording keeps up; when the queue is full they wait for it,
// so a stream never outruns its recording (a write to the store is bounded
// by its timeout, after which the recording fails and stops holding the
// stream). Close finishes it.
type Stream struct {
	recorder *Recorder
	info     StreamInfo
	prefix   string
	cast     *castWriter

	mu sync.Mutex
	// queue holds what the relay carried since the recording last took
	// it, its segments in order.
	queue  []segment
	queued int
	// blocks hold the bytes of the queue, the last one filling.
	blocks []*[]byte
	// spareQueue and spareBlocks are the slices the recording took last
	// time, for the next swap; only its goroutine touches them.
	spareQueue  []segment
	spareBlocks []*[]byte
	// space is signalled when the queue was taken, or waiting ends.
	space  *sync.Cond
	closed bool
	// failed is why the recording stopped, once it did; onFail is told.
	failed error
	onFail func(error)

	wake, closing, done chan struct{}
}

// segment is what one read or write of the relay carried, in a block of
// the queue.
type segment struct {
	at         time.Duration
	fromClient bool
	data       []byte
}

// blockBytes is the size of the blocks queues are made of: a few reads of
// the relay each.
const blockBytes = 64 << 10

// blockPool holds the blocks of all streams' queues: a stream that is idle
// holds none.
var blockPool = sync.Pool{New: func() any {
	b := make([]byte, 0, blockBytes)
	return &b
}}

// queueBytes copies b into the queue's last block, or a new one when it
// does not fit, and returns the copy.
func (s *Stream) queueBytes(b []byte) []byte {
	var block *[]byte
	if n := len(s.blocks); n > 0 && cap(*s.blocks[n-1])-len(*s.blocks[n-1]) >= len(b) {
		block = s.blocks[n-1]
	} else {
		if len(b) <= blockBytes {
			block = blockPool.Get().(*[]byte)
		} else {
			large := make([]byte, 0, len(b))
			block = &large
		}
		s.blocks = append(s.blocks, block)
	}
	start := len(*block)
	*block = append(*block, b...)
	return (*block)[start:len(*block):len(*block)]
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
// runs; under PolicyRequired it is told, with a *Failure, from the
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
	if s.closed || s.failed != nil {
		return
	}
	s.queue = append(s.queue, segment{at: at, fromClient: fromClient, data: s.queueBytes(b)})
	s.queued += len(b)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close finishes the recording: what is queued is decoded and written and
// the manifest follows, from the recording's own goroutine. Wait waits
// for that.
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

// run decodes what the relay queued and writes it every FlushInterval,
// until Close.
func (s *Stream) run() {
	defer close(s.done)
	ticker := s.recorder.cfg.Clock.NewTicker(s.recorder.cfg.FlushInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.wake:
			s.decodeQueued()
		case <-ticker.C():
			s.decodeQueued()
			s.flush(false)
		case <-s.closing:
			s.decodeQueued()
			s.flush(true)
			return
		}
	}
}

// decodeQueued takes the queue and decodes it, writing a chunk whenever
// chunkBytes are recorded, and gives the queue's blocks back.
func (s *Stream) decodeQueued() {
	s.mu.Lock()
	queue, blocks := s.queue, s.blocks
	s.queue, s.blocks, s.queued = s.spareQueue[:0], s.spareBlocks[:0], 0
	s.space.Broadcast()
	s.mu.Unlock()
	defer func() {
		for i, block := range blocks {
			if cap(*block) == blockBytes {
				*block = (*block)[:0]
				blockPool.Put(block)
			}
			blocks[i] = nil
		}
		clear(queue)
		s.spareQueue, s.spareBlocks = queue, blocks
	}()
	for _, seg := range queue {
		if err := s.cast.feed(seg.at, seg.fromClient, seg.data); err != nil {
			s.fail(fmt.Errorf("the stream could not be decoded: %w", err))
			return
		}
		if len(s.cast.buf) >= chunkBytes {
			if s.flush(false); !s.Recording() {
				return
			}
		}
	}
}

// chunkBytes is the size at which a recording is written before its
// FlushInterval: a fast stream does not pile up in memory.
const chunkBytes = 4 << 20

// flush writes what was recorded since the last flush as the next chunk,
// and at the end the manifest.
func (s *Stream) flush(final bool) {
	r := s.recorder
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if chunk := s.cast.pending(final); len(chunk) > 0 {
		if err := r.cfg.Store.Put(ctx, chunkKey(s.prefix, s.cast.chunks+1), chunk); err != nil {
			writeFailures.Inc()
			s.fail(fmt.Errorf("a chunk could not be written: %w", err))
		} else {
			s.cast.written(chunk)
			writtenBytes.Add(float64(len(chunk)))
		}
	}
	if !final {
		return
	}
	m := s.cast.manifest(r.cfg.Clock.Now())
	s.mu.Lock()
	if s.failed != nil && m.Failed == "" {
		m.Failed = s.failed.Error()
	}
	s.mu.Unlock()
	data, _ := json.Marshal(m)
	if err := r.cfg.Store.Put(ctx, s.prefix+manifestObject, data); err != nil {
		writeFailures.Inc()
		klog.ErrorS(err, "Recording manifest not written", "session", klog.KRef(s.info.Namespace, s.info.Name), "stream", s.info.Stream)
	}
}

// fail records why the recording stopped, once, and tells the relay under
// PolicyRequired; under best-effort decoding stops but written chunks stay.
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
		"policy", s.recorder.cfg.Policy)
	if s.recorder.Required() && onFail != nil {
		onFail(&Failure{Err: fmt.Errorf("recording required: %w", err), SPDYErrorStream: s.cast.decoder.spdyErrorStream()})
	}
}

// Failure is what OnFailure is told when a recording fails under
// PolicyRequired: why, and what the relay needs to tell the client so.
type Failure struct {
	Err error
	// SPDYErrorStream is the SPDY stream (streamType "error") on which the
	// client reads how the command ended, where the relay can say why the
	// stream ends; 0 when the stream is not SPDY or the client opened none.
	SPDYErrorStream uint32
}

func (f *Failure) Error() string { return f.Err.Error() }

func (f *Failure) Unwrap() error { return f.Err }
