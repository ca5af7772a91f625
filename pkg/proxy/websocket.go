// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clustergate/clustergate/pkg/wsframe"
)

// closePolicyViolation is the WebSocket close code sent when a session
// ends a stream: the client may not go on, and the reason says why.
const closePolicyViolation = 1008

// websocketConn is the client side of an upgraded WebSocket stream. It
// follows the frames written to the client, so that when the session ends
// it can finish with a close frame that says why, between two frames,
// instead of cutting the connection mid-frame; kubectl then reports the
// reason instead of an abnormal closure.
type websocketConn struct {
	net.Conn
	// raw is the network connection beneath; ended says why the session
	// ended, nil while it has not.
	raw   net.Conn
	ended func() error

	// mu keeps the close frame from landing inside another write.
	mu     sync.Mutex
	frames frameTracker
	closed atomic.Bool
}

// closeFrameTimeout bounds the wait for the close frame: a client that
// stopped reading must not keep its stream open past the session.
const closeFrameTimeout = 200 * time.Millisecond

func (c *websocketConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Write(b)
	c.frames.feed(b[:n])
	return n, err
}

// finish ends the stream with a close frame saying why, if the stream is
// between two frames and the target did not close it already; no write
// follows.
func (c *websocketConn) finish(why error) {
	// A write in flight to a client that does not read gives up too.
	_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFrameTimeout))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Swap(true) {
		return
	}
	if c.frames.atBoundary() && !c.frames.closing {
		_, _ = c.Conn.Write(closeFrame(closePolicyViolation, why.Error()))
	}
}

// Close closes the connection, even under a write in flight; once the
// session ended, after the close frame and without waiting on TLS.
func (c *websocketConn) Close() error {
	if why := c.ended(); why != nil {
		c.finish(why)
		return c.raw.Close()
	}
	c.closed.Store(true)
	return c.Conn.Close()
}

// closeFrame is an unmasked close frame, as a server sends it, with the
// reason cut to what a control frame may carry.
func closeFrame(code uint16, reason string) []byte {
	const maxReason = 123
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "")
	}
	frame := []byte{0x88, byte(2 + len(reason)), byte(code >> 8), byte(code)}
	return append(frame, reason...)
}

// frameTracker follows what a server writes on an upgraded connection: the
// HTTP response that switches protocols, then WebSocket frames. It knows
// whether the bytes so far end exactly between two frames.
type frameTracker struct {
	// response collects the HTTP response until its blank line.
	response []byte
	inFrames bool
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
		if !bytes.HasPrefix(f.response, []byte("HTTP/1.1 101 ")) {
			f.disable()
			return
		}
		b = f.response[end+4:]
		f.response, f.inFrames = nil, true
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

func (f *frameTracker) atBoundary() bool {
	return !f.disabled && f.inFrames && f.remaining == 0 && len(f.header) == 0
}
