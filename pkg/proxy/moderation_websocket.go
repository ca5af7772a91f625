// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // RFC 6455 names SHA-1 for Sec-WebSocket-Accept.
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
)

// A moderated stream over WebSocket tells its owner that it waits: the
// relay answers the client's upgrade itself, in a channel protocol the
// client offered, writes the message on the client's stdout channel (with
// a terminal) or stderr channel, and holds what the client sends. Once a
// moderator came it opens the stream to the target in the same protocol and
// relays both ways; when no moderator comes in time, or the target refuses,
// the client reads a Status on the error channel, as from a kubelet.

// channelProtocols are the WebSocket protocols of exec and attach whose
// frames carry a channel byte, newest first: the relay answers in the
// first the client offers. The error channel carries a Status from v4 on.
var channelProtocols = []string{"v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"}

// The channels of the channel protocols the relay writes.
const (
	channelStdout = 1
	channelStderr = 2
	channelError  = 3
)

// heldInputChunks bounds what a waiting stream holds of its client's
// input, in reads of up to 32 KiB: past it the client waits.
const heldInputChunks = 32

// upgradeHandshakeTimeout bounds the target's answer to the upgrade.
const upgradeHandshakeTimeout = 30 * time.Second

// channelProtocol is the channel protocol the relay answers req in, "" when
// the client offers none or does not ask for WebSocket.
func channelProtocol(req *http.Request) string {
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") || req.Header.Get("Sec-Websocket-Key") == "" {
		return ""
	}
	offered := headerTokens(req.Header, "Sec-Websocket-Protocol")
	for _, p := range channelProtocols {
		if slices.Contains(offered, p) {
			return p
		}
	}
	return ""
}

// serveModeratedWebSocket answers the upgrade, waits for a moderator while
// the client reads why, and relays the stream to location once one came.
func (p *proxiedRequest) serveModeratedWebSocket(req *http.Request, location url.URL, protocol string) {
	conn, rw, err := p.cw.Hijack()
	if err != nil {
		p.refused = apierrors.NewServiceUnavailable(err.Error())
		return
	}
	defer conn.Close()
	accept := sha1.Sum([]byte(req.Header.Get("Sec-Websocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) //nolint:gosec // RFC 6455.
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(accept[:]), protocol); err != nil {
		return
	}
	// What the client sends is read from now on, and held until the
	// stream reaches the target; a client that goes away ends the wait.
	waitCtx, clientGone := context.WithCancelCause(p.ctx)
	defer clientGone(nil)
	input := make(chan []byte, heldInputChunks)
	go func() {
		defer close(input)
		if n := rw.Reader.Buffered(); n > 0 {
			b, _ := rw.Reader.Peek(n)
			input <- slices.Clone(b)
		}
		for {
			b := make([]byte, 32<<10)
			n, err := conn.Read(b)
			if n > 0 {
				input <- b[:n]
			}
			if err != nil {
				clientGone(errors.New("the client went away"))
				return
			}
		}
	}()
	channel := byte(channelStderr)
	if p.inspected.stream.TTY {
		channel = channelStdout
	}
	m := p.moderated
	err = m.await(waitCtx, func() { _, _ = conn.Write(channelFrame(channel, []byte(m.waitingMessage()))) })
	if err != nil {
		p.refused = err
		if sessionEnd(p.ctx) == nil {
			_, _ = conn.Write(statusFrames(protocol, err))
		}
		return
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	target, fromTarget, err := dialUpgrade(p.ctx, req, location, boundTo(p.ctx, p.target.Transport),
		http.Header{"Sec-Websocket-Key": {base64.StdEncoding.EncodeToString(key)}, "Sec-Websocket-Protocol": {protocol}}, "Sec-Websocket-Protocol")
	if err != nil {
		p.refused = apierrors.NewServiceUnavailable(fmt.Sprintf("the session's target: %v", err))
		_, _ = conn.Write(statusFrames(protocol, p.refused))
		return
	}
	defer target.Close()
	var relays sync.WaitGroup
	relays.Go(func() {
		for b := range input {
			if _, err := target.Write(b); err != nil {
				break
			}
		}
		_ = target.Close()
	})
	_, _ = io.Copy(conn, fromTarget)
	_ = conn.Close()
	_ = target.Close()
	relays.Wait()
}

// dialUpgrade opens the stream of req to location, through transport,
// with the headers of set in place of the client's, and returns the
// connection and what reads the target's side. The target must answer in
// the protocol that set names in its header protocolHeader.
func dialUpgrade(ctx context.Context, req *http.Request, location url.URL, transport *http.Transport, set http.Header, protocolHeader string) (net.Conn, io.Reader, error) {
	out := req.Clone(ctx)
	out.URL, out.Host, out.RequestURI = &location, location.Host, ""
	out.Body, out.ContentLength = nil, 0
	for name, values := range set {
		out.Header[name] = values
	}
	protocol := set.Get(protocolHeader)
	utilnet.AppendForwardedForHeader(out)
	conn, err := utilproxy.DialURL(ctx, &location, transport)
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(upgradeHandshakeTimeout))
	if err := out.Write(conn); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, out)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get(protocolHeader) != protocol {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_ = conn.Close()
		return nil, nil, fmt.Errorf("the target answered the stream with %s (protocol %q): %s", resp.Status, resp.Header.Get(protocolHeader), body)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br, nil
}

// channelFrame is an unmasked binary frame, as a server sends it, of data
// on channel.
func channelFrame(channel byte, data []byte) []byte {
	n := len(data) + 1
	frame := []byte{0x82}
	switch {
	case n < 126:
		frame = append(frame, byte(n))
	case n <= 0xffff:
		frame = binary.BigEndian.AppendUint16(append(frame, 126), uint16(n))
	default:
		frame = binary.BigEndian.AppendUint64(append(frame, 127), uint64(n))
	}
	return append(append(frame, channel), data...)
}

// statusFrames end a channel-protocol stream as a kubelet ends a failed
// one: err on the error channel, a Status from v4.channel.k8s.io on and
// its text before, then a normal close frame, so that kubectl prints the
// whole message.
func statusFrames(protocol string, err error) []byte {
	return append(channelFrame(channelError, errorStreamPayload(protocol, err)), closeFrame(closeNormal, "")...)
}

// errorStreamPayload is what a kubelet writes on the error channel or
// stream of a stream that failed with err: a Status from
// v4.channel.k8s.io on, the message before. The Status is err's own, if
// it is one; Forbidden for a moderated stream that ended or did not start
// (moderation refused it); ServiceUnavailable for the rest. Its message is
// cut at maxStatusMessage.
func errorStreamPayload(protocol string, err error) []byte {
	message := err.Error()
	if len(message) > maxStatusMessage {
		message = message[:maxStatusMessage]
	}
	if protocol != "v5.channel.k8s.io" && protocol != "v4.channel.k8s.io" {
		return []byte(message)
	}
	var s metav1.Status
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status):
		s = status.Status()
	case moderationEnd(err), errors.Is(err, errNoModerator):
		s = apierrors.NewForbidden(sessionProxy, "", err).Status()
	default:
		s = apierrors.NewServiceUnavailable(message).Status()
	}
	if len(s.Message) > maxStatusMessage {
		s.Message = s.Message[:maxStatusMessage]
	}
	s.Kind, s.APIVersion = "Status", "v1"
	data, jerr := json.Marshal(s)
	if jerr != nil {
		return []byte(message)
	}
	return data
}

// closeNormal is the WebSocket close code of a stream that ends with a
// Status on its error channel: the Status says why.
const closeNormal = 1000
