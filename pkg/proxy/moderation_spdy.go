// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// A moderated stream over SPDY (kubectl with
// KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false, and older clients) tells its
// owner that it waits, as over WebSocket: the relay answers the client's
// upgrade itself, in a stream protocol the client offered, accepts the
// streams the client opens, writes the message on its stdout stream (with
// a terminal) or stderr stream, and holds what the client sends. Once a
// moderator came it opens the same streams to the target, in the same
// protocol, and relays each stream both ways; when no moderator comes in
// time, or the target refuses, the client reads a Status on its error
// stream, as from a kubelet. A moderator's end, and the session's, reach
// the client the same way (upgradedConn, which knows the error stream).

// spdyStreamProtocols are the protocols of exec and attach over SPDY,
// newest first: the relay answers in the first the client offers. The
// error stream carries a Status from v4.channel.k8s.io on.
var spdyStreamProtocols = []string{"v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"}

// streamTypeHeader names the channel of a SPDY stream of exec and attach.
const streamTypeHeader = "streamType"

// spdyProtocol is the stream protocol the relay answers req in, "" when
// req does not ask for SPDY/3.1 or offers none it knows.
func spdyProtocol(req *http.Request) string {
	if !strings.EqualFold(req.Header.Get("Upgrade"), "SPDY/3.1") {
		return ""
	}
	offered := headerTokens(req.Header, "X-Stream-Protocol-Version")
	for _, p := range spdyStreamProtocols {
		if slices.Contains(offered, p) {
			return p
		}
	}
	return ""
}

// headerTokens are the comma-separated values of header name, trimmed.
func headerTokens(h http.Header, name string) []string {
	var tokens []string
	for _, value := range h.Values(name) {
		for t := range strings.SplitSeq(value, ",") {
			tokens = append(tokens, strings.TrimSpace(t))
		}
	}
	return tokens
}

// serveModeratedSPDY answers the upgrade, waits for a moderator while the
// client reads why, and relays the stream's streams to location once one
// came.
func (p *proxiedRequest) serveModeratedSPDY(req *http.Request, location url.URL, protocol string) {
	conn, rw, err := p.cw.Hijack()
	if err != nil {
		p.refused = apierrors.NewServiceUnavailable(err.Error())
		return
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n\r\n",
		protocol); err != nil {
		return
	}
	m := p.moderated
	relay := &spdyRelay{ctx: p.ctx, protocol: protocol, started: make(chan struct{}), waitingOn: "stderr", message: []byte(m.waitingMessage()),
		errorStream: p.cw.setSPDYErrorStream}
	if p.inspected.stream.TTY {
		relay.waitingOn = "stdout"
	}
	// What the client sent before the upgrade was answered is read first,
	// then the connection, through what counts and records it.
	buffered, _ := rw.Reader.Peek(rw.Reader.Buffered())
	client, err := spdy.NewServerConnection(&bufferedConn{Conn: conn, r: io.MultiReader(bytes.NewReader(buffered), conn)}, relay.opened)
	if err != nil {
		return
	}
	defer relay.close(conn, client)
	// A client that goes away ends the wait.
	waitCtx, clientGone := context.WithCancelCause(p.ctx)
	defer clientGone(nil)
	go func() {
		select {
		case <-client.CloseChan():
			clientGone(errors.New("the client went away"))
		case <-waitCtx.Done():
		}
	}()
	if err := m.await(waitCtx, relay.waiting); err != nil {
		p.refused = err
		if sessionEnd(p.ctx) == nil {
			relay.refuse(client, err)
		}
		return
	}
	target, fromTarget, err := dialUpgrade(p.ctx, req, location, boundTo(p.ctx, p.target.Transport),
		http.Header{"X-Stream-Protocol-Version": {protocol}}, "X-Stream-Protocol-Version")
	if err != nil {
		p.refused = apierrors.NewServiceUnavailable(fmt.Sprintf("the session's target: %v", err))
		relay.refuse(client, p.refused)
		return
	}
	targetConn, err := spdy.NewClientConnection(&bufferedConn{Conn: target, r: fromTarget})
	if err != nil {
		p.refused = apierrors.NewServiceUnavailable(fmt.Sprintf("the session's target: %v", err))
		relay.refuse(client, p.refused)
		return
	}
	defer targetConn.Close()
	relay.start(targetConn)
	select {
	case <-targetConn.CloseChan():
		// The command ended: what the target's streams still carried
		// reaches the client, which takes it and closes, as from a kubelet.
		relay.relayed.Wait()
		select {
		case <-client.CloseChan():
		case <-time.After(spdyStatusLinger):
		}
	case <-client.CloseChan():
	case <-p.ctx.Done():
	}
}

// spdyRelay relays the streams a SPDY client opens to the target once a
// moderator came.
type spdyRelay struct {
	// ctx is the request's: it ends with the session.
	ctx      context.Context
	protocol string
	// started is closed once target is connected.
	started chan struct{}
	target  httpstream.Connection
	// errorStream is told the id of the client's error stream.
	errorStream func(uint32)

	mu sync.Mutex
	// streams are the client's, in the order it opened them; closed is
	// set once the relay ends, after which none is accepted.
	streams []httpstream.Stream
	closed  bool
	// message is written on the client's stream of type waitingOn once
	// the stream waits (due) and that stream is open; said once it was.
	message   []byte
	waitingOn string
	due, said bool
	// relayed counts the streams whose target side still reaches the
	// client.
	relayed sync.WaitGroup
}

// opened accepts a stream the client opened (spdystream calls it before
// it replies) and relays it once replied.
func (r *spdyRelay) opened(s httpstream.Stream, replySent <-chan struct{}) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the stream ended")
	}
	r.streams = append(r.streams, s)
	if s.Headers().Get(streamTypeHeader) == "error" {
		r.errorStream(s.Identifier())
	}
	r.relayed.Add(1)
	go func() {
		defer r.relayed.Done()
		<-replySent
		r.say()
		r.relay(s)
	}()
	return nil
}

// waiting is called once the stream waits for a moderator.
func (r *spdyRelay) waiting() {
	r.mu.Lock()
	r.due = true
	r.mu.Unlock()
	r.say()
}

// say writes the waiting message once it is due and its stream is open.
func (r *spdyRelay) say() {
	r.mu.Lock()
	var to httpstream.Stream
	if r.due && !r.said {
		to = r.stream(r.waitingOn)
		r.said = to != nil
	}
	r.mu.Unlock()
	if to != nil {
		_, _ = to.Write(r.message)
	}
}

// stream is the client's stream of streamType, nil if it opened none;
// mu is held.
func (r *spdyRelay) stream(streamType string) httpstream.Stream {
	for _, s := range r.streams {
		if s.Headers().Get(streamTypeHeader) == streamType {
			return s
		}
	}
	return nil
}

// relay holds what the client sends on s until the target is connected,
// then opens s to the target and copies each way; it returns once the
// target's side of s ended.
func (r *spdyRelay) relay(s httpstream.Stream) {
	input := make(chan []byte, heldInputChunks)
	var inputErr error
	go func() {
		defer close(input)
		for {
			b := make([]byte, 32<<10)
			n, err := s.Read(b)
			if n > 0 {
				input <- b[:n]
			}
			if err != nil {
				inputErr = err
				return
			}
		}
	}()
	<-r.started
	if r.target == nil {
		return
	}
	ts, err := r.target.CreateStream(s.Headers().Clone())
	if err != nil {
		_ = s.Reset()
		return
	}
	go func() {
		for b := range input {
			if _, err := ts.Write(b); err != nil {
				_ = ts.Reset()
				return
			}
		}
		// The client closed its side (stdin at its end): so does the
		// target's.
		if errors.Is(inputErr, io.EOF) {
			_ = ts.Close()
		}
	}()
	_, _ = io.Copy(s, ts)
	// A target cut off by the session's end (or a moderator's) is not the
	// command's end: the client's error stream gets why (upgradedConn),
	// not an end that reads as success.
	if sessionEnd(r.ctx) == nil {
		_ = s.Close()
	}
}

// start relays every stream to target; a nil target relays none.
func (r *spdyRelay) start(target httpstream.Connection) {
	r.target = target
	close(r.started)
}

// refuse ends a stream that did not start with err, as a Status on the
// client's error stream, as a kubelet refuses one.
func (r *spdyRelay) refuse(client httpstream.Connection, err error) {
	r.mu.Lock()
	errorStream := r.stream("error")
	r.mu.Unlock()
	if errorStream == nil {
		return
	}
	_, _ = errorStream.Write(errorStreamPayload(r.protocol, err))
	_ = errorStream.Close()
	select {
	case <-client.CloseChan():
	case <-time.After(spdyStatusLinger):
	}
}

// close ends the relay: no stream is accepted any more, and none waits
// for a target. Once the session (or a moderator) ended the stream, its
// connection, conn, is closed first, with why on the client's error stream
// (upgradedConn): the resets of the client's streams that follow would
// lose it.
func (r *spdyRelay) close(conn net.Conn, client httpstream.Connection) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	select {
	case <-r.started:
	default:
		r.start(nil)
	}
	if sessionEnd(r.ctx) != nil {
		_ = conn.Close()
	}
	_ = client.Close()
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
