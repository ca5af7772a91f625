// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/clustergate/clustergate/pkg/recording"
)

// connWriter counts what is written to the client, knows whether the
// target's answer reached it, and remembers a hijacked connection so that it
// can be closed from outside.
type connWriter struct {
	http.ResponseWriter
	written                 atomic.Int64
	hijackedIn, hijackedOut atomic.Int64
	hijacked                atomic.Bool
	// answered is set once the target's status line was passed on;
	// midLine while the last byte written did not end a line.
	answered, midLine atomic.Bool
	// code is the status passed on: by WriteHeader, or read from the
	// target's answer written to a hijacked connection.
	code atomic.Int32

	// recording, if set, records the hijacked stream.
	recording *recording.Stream

	// body, if set, gathers the body of a response the client reads
	// whole (bufferBody).
	body *bufio.Writer

	// framed is set for a WebSocket or SPDY upgrade, whose end is announced
	// in the protocol's own frames (upgradedConn); ended says why the
	// session ended, nil while it has not.
	framed bool
	ended  func() error

	mu sync.Mutex
	// conn is the hijacked client connection as the handler uses it; raw
	// is the network connection beneath it.
	conn, raw net.Conn
	// closed is set when the session ended: no connection is hijacked
	// after that.
	closed bool
}

func (c *connWriter) WriteHeader(code int) {
	c.answered.Store(true)
	c.code.CompareAndSwap(0, int32(code))
	c.ResponseWriter.WriteHeader(code)
}

func (c *connWriter) Write(b []byte) (int, error) {
	c.answered.Store(true)
	c.code.CompareAndSwap(0, http.StatusOK)
	var n int
	var err error
	if c.body != nil {
		n, err = c.body.Write(b)
	} else {
		n, err = c.ResponseWriter.Write(b)
	}
	c.written.Add(int64(n))
	if n > 0 {
		c.midLine.Store(b[n-1] != '\n')
	}
	return n, err
}

func (c *connWriter) Flush() {
	if c.body != nil {
		return
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands out the client connection and keeps it for closeHijacked.
func (c *connWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := c.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be upgraded")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Still unhijacked, the connection can carry the refusal.
	if c.closed {
		return nil, nil, errors.New("the session ended")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.raw = conn
	if tc, ok := conn.(*tls.Conn); ok {
		c.raw = tc.NetConn()
	}
	c.conn = &countingConn{Conn: conn, in: &c.hijackedIn, out: &c.hijackedOut, code: &c.code}
	if c.recording != nil {
		c.conn = &recordingConn{Conn: c.conn, stream: c.recording}
	}
	if c.framed {
		c.conn = &upgradedConn{Conn: c.conn, raw: c.raw, ended: c.ended}
	}
	c.hijacked.Store(true)
	return c.conn, rw, nil
}

// closeHijacked ends a hijacked stream because its session ended or its
// required recording failed: with a frame saying why where the protocol
// has one (upgradedConn), then the network connection at once. (Closing
// TLS would first send an alert, which a client that stopped reading could
// hold up for seconds.) A nil why is the session's end, as ended says it:
// worded only for a stream that needs it.
func (c *connWriter) closeHijacked(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn == nil {
		return
	}
	if framed, ok := c.conn.(*upgradedConn); ok {
		if why == nil {
			why = c.ended()
		}
		framed.finish(why)
	}
	_ = c.raw.Close()
}

// setSPDYErrorStream tells the hijacked SPDY stream which of its streams
// is the client's error stream, on which its end is said.
func (c *connWriter) setSPDYErrorStream(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if framed, ok := c.conn.(*upgradedConn); ok {
		framed.errorStream.Store(id)
	}
}

// status is the HTTP status passed on to the client; 0 while none was.
func (c *connWriter) status() int { return int(c.code.Load()) }

// countingConn counts the bytes of a hijacked connection and reads the
// status of the answer it carries first.
type countingConn struct {
	net.Conn
	in, out *atomic.Int64
	code    *atomic.Int32
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	if c.out.Load() == 0 {
		c.code.CompareAndSwap(0, int32(upgradeStatus(b)))
	}
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// countingReader counts the bytes of a request body.
type countingReader struct {
	io.ReadCloser
	n atomic.Int64
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	r.n.Add(int64(n))
	return n, err
}

// finishWatch ends a watch that the session's end cut off, when its
// answer is JSON, with a final ERROR event whose Status says why, so that
// kubectl reports it.
func (cw *connWriter) finishWatch(cause error, t Target) {
	if cw.hijacked.Load() || !cw.answered.Load() || !strings.HasPrefix(cw.Header().Get("Content-Type"), "application/json") {
		return
	}
	event := finalEvent(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, cause))
	if event == nil {
		return
	}
	// An event cut off mid-line is lost; the final one stands on its own.
	if !cw.midLine.Load() {
		event = event[1:]
	}
	// Not flushed: the handler returns right after, and the server sends
	// the event with the end of the stream, in one frame on HTTP/2.
	_, _ = cw.ResponseWriter.Write(event)
}

// lastFinalEvent is the final watch event made last: every watch of a
// session that ends gets the same one, and thousands may end at once.
var lastFinalEvent atomic.Pointer[finalWatchEvent]

type finalWatchEvent struct {
	message string
	event   []byte
}

// finalEvent is the ERROR event, with a newline before and after, whose
// Status (reason Gone) carries message; nil if it cannot be encoded.
func finalEvent(message string) []byte {
	if last := lastFinalEvent.Load(); last != nil && last.message == message {
		return last.event
	}
	//nolint:staticcheck // SA1019: reason Gone, which clients and tests check; NewResourceExpired says Expired.
	status := apierrors.NewGone(message).Status()
	status.Kind, status.APIVersion = "Status", "v1"
	event, err := json.Marshal(map[string]any{"type": "ERROR", "object": status})
	if err != nil {
		return nil
	}
	event = append(append([]byte{'\n'}, event...), '\n')
	lastFinalEvent.Store(&finalWatchEvent{message: message, event: event})
	return event
}
