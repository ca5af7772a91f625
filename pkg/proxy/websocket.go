// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clustergate/clustergate/pkg/wsframe"
)

// closePolicyViolation is the WebSocket close code sent when a session
// ends a stream: the client may not go on, and the reason says why.
const closePolicyViolation = 1008

// upgradedConn is the client side of an upgraded WebSocket or SPDY stream.
// It follows the frames written to the client, so that when the session
// ends, or the stream's required recording fails, it can finish with a
// frame that says why, between two frames, instead of cutting the
// connection mid-frame; kubectl then reports the reason instead of an
// abnormal closure. A WebSocket stream gets a close frame; a SPDY stream
// gets a Status on the client's error stream when that stream is known
// (a failed recording or a moderated stream's relay knows it), and is cut
// otherwise.
type upgradedConn struct {
	net.Conn
	// raw is the network connection beneath; ended says why the session
	// ended, nil while it has not.
	raw   net.Conn
	ended func() error

	// mu keeps the final frame from landing inside another write.
	mu     sync.Mutex
	frames frameTracker
	closed atomic.Bool
	// final, while set, is the frame that ends the stream as soon as the
	// frame in progress is written whole; written is closed then.
	final   []byte
	written chan struct{}
	// finishing is set once finish started; finished lets it run once,
	// and makes every other caller wait for it.
	finishing atomic.Bool
	finished  sync.Once
	// errorStream is the SPDY client's error stream, when the relay of a
	// moderated stream learnt it (0: unknown).
	errorStream atomic.Uint32
}

// closeFrameTimeout bounds the wait for the final frame: a client that
// stopped reading must not keep its stream open past the session.
const closeFrameTimeout = 200 * time.Millisecond

func (c *upgradedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	if c.final == nil {
		n, err := c.Conn.Write(b)
		c.frames.feed(b[:n])
		return n, err
	}
	// The stream ends with the frame in progress.
	end := c.frames.boundaryIn(b)
	if end < 0 {
		end = len(b)
	}
	n, err := c.Conn.Write(b[:end])
	c.frames.feed(b[:n])
	if err == nil && c.frames.atBoundary() {
		c.writeFinal()
		return n, net.ErrClosed
	}
	return n, err
}

// writeFinal writes the final frame; no write follows. mu is held.
func (c *upgradedConn) writeFinal() {
	_, _ = c.Conn.Write(c.final)
	c.final = nil
	c.closed.Store(true)
	close(c.written)
}

// finish ends the stream with a frame saying why, between two frames
// (waiting up to closeFrameTimeout for the one in progress), unless the
// target closed the stream already or the protocol cannot say why; no
// write follows. A SPDY client also gets a moment to take the Status.
// Nothing more of the client's reaches the target meanwhile.
func (c *upgradedConn) finish(why error) {
	c.finishing.Store(true)
	c.finished.Do(func() {
		_ = c.raw.SetReadDeadline(time.Now())
		// A write in flight to a client that does not read gives up too.
		_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFrameTimeout))
		c.mu.Lock()
		final := closeFrame(closePolicyViolation, why.Error())
		switch {
		case c.frames.spdy:
			final = spdyStatusFrame(c.frames.protocol, c.spdyErrorStream(why), why)
		case moderationEnd(why) && slices.Contains(channelProtocols, c.frames.protocol):
			// Why a moderated stream ended is the moderator's reason, too
			// long for a close frame: a Status says it.
			final = statusFrames(c.frames.protocol, why)
		}
		if c.closed.Load() || final == nil || c.frames.closing || !c.frames.inFrames || c.frames.disabled {
			c.closed.Store(true)
			c.mu.Unlock()
			return
		}
		c.final, c.written = final, make(chan struct{})
		if c.frames.atBoundary() {
			c.writeFinal()
		}
		written := c.written
		c.mu.Unlock()
		select {
		case <-written:
		case <-time.After(closeFrameTimeout):
			c.mu.Lock()
			c.final = nil
			c.closed.Store(true)
			c.mu.Unlock()
			return
		}
		if c.frames.spdy {
			time.Sleep(spdyStatusLinger)
		}
	})
}

// Close closes the connection, even under a write in flight; once the
// session ended, after the final frame and without waiting on TLS; while
// a final frame is on its way, once it is.
func (c *upgradedConn) Close() error {
	if why := c.ended(); why != nil {
		c.finish(why)
		return c.raw.Close()
	}
	if c.finishing.Load() {
		c.finished.Do(func() {})
	}
	c.closed.Store(true)
	return c.Conn.Close()
}

// closeFrame is an unmasked close frame, as a server sends it, with the
// reason fit to what a control frame may carry: a longer one loses its
// middle, so that both what failed and the cause at its end stay.
func closeFrame(code uint16, reason string) []byte {
	const maxReason, elided = 123, "…"
	if len(reason) > maxReason {
		keep := (maxReason - len(elided)) / 2
		reason = strings.ToValidUTF8(reason[:keep], "") + elided + strings.ToValidUTF8(reason[len(reason)-keep:], "")
	}
	frame := []byte{0x88, byte(2 + len(reason)), byte(code >> 8), byte(code)}
	return append(frame, reason...)
}

// frameTracker follows what a server writes on an upgraded connection: the
// HTTP response that switches protocols, then WebSocket or SPDY frames. It
// knows whether the bytes so far end exactly between two frames.
type frameTracker struct {
	// response collects the HTTP response until its blank line.
	response []byte
	inFrames bool
	// spdy is set when the response switched to SPDY rather than
	// WebSocket; protocol is the stream protocol it chose.
	spdy     bool
	protocol string
	// disabled is set when the response did not switch protocols, or the
	// stream is not understood: no boundary is ever reported then.
	disabled bool
	header   []byte
	// remaining payload bytes of the current frame.
	remaining uint64
	// closing is set once the server sent a close frame of its own.
	closing bool
}

func (f *frameTracker) feed(b []byte) {
	if f.disabled {
		return
	}
	if !f.inFrames {
		f.response = append(f.response, b...)
		end := bytes.Index(f.response, []byte("\r\n\r\n"))
		if end < 0 {
			if len(f.response) > 64<<10 {
				f.disable()
			}
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(f.response[:end+4])), nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			f.disable()
			return
		}
		switch upgrade := resp.Header.Get("Upgrade"); {
		case strings.EqualFold(upgrade, "websocket"):
			f.protocol = resp.Header.Get("Sec-Websocket-Protocol")
		case strings.HasPrefix(strings.ToLower(upgrade), "spdy/"):
			f.spdy, f.protocol = true, resp.Header.Get("X-Stream-Protocol-Version")
		default:
			f.disable()
			return
		}
		b = f.response[end+4:]
		f.response, f.inFrames = nil, true
	}
	if f.spdy {
		f.feedSPDY(b)
		return
	}
	for len(b) > 0 {
		if f.remaining > 0 {
			n := min(uint64(len(b)), f.remaining)
			f.remaining -= n
			b = b[n:]
			continue
		}
		f.header = append(f.header, b[0])
		b = b[1:]
		if size := wsframe.HeaderSize(f.header); size > 0 && len(f.header) == size {
			f.remaining = wsframe.PayloadSize(f.header)
			f.closing = f.closing || f.header[0]&0x0f == 0x8
			f.header = f.header[:0]
		}
	}
}

func (f *frameTracker) disable() { f.disabled, f.response = true, nil }

// boundaryIn is how many bytes of b complete the frame in progress; -1
// when b ends before it does.
func (f *frameTracker) boundaryIn(b []byte) int {
	probe := *f
	probe.header = append([]byte(nil), f.header...)
	for i := 0; i < len(b); {
		n := 1
		if probe.remaining > 0 {
			n = int(min(uint64(len(b)-i), probe.remaining))
		}
		probe.feed(b[i : i+n])
		if i += n; probe.atBoundary() {
			return i
		}
	}
	return -1
}

func (f *frameTracker) atBoundary() bool {
	return !f.disabled && f.inFrames && f.remaining == 0 && len(f.header) == 0
}
