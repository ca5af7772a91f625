// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"k8s.io/utils/clock"
)

func frame(payload int, masked bool) []byte {
	b := []byte{0x82}
	mask := byte(0)
	if masked {
		mask = 0x80
	}
	switch {
	case payload < 126:
		b = append(b, mask|byte(payload))
	case payload < 1<<16:
		b = append(b, mask|126, byte(payload>>8), byte(payload))
	default:
		b = append(b, mask|127, 0, 0, 0, 0, byte(payload>>24), byte(payload>>16), byte(payload>>8), byte(payload))
	}
	if masked {
		b = append(b, 1, 2, 3, 4)
	}
	return append(b, bytes.Repeat([]byte{'x'}, payload)...)
}

// spdyFrame is a SPDY data frame on stream 1 with payload bytes.
func spdyFrame(payload int) []byte {
	b := []byte{0, 0, 0, 1, 0, byte(payload >> 16), byte(payload >> 8), byte(payload)}
	return append(b, bytes.Repeat([]byte{'x'}, payload)...)
}

func TestFrameTracker(t *testing.T) {
	switching := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	spdySwitching := []byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name     string
		stream   []byte
		boundary bool
	}{
		{"response only", switching, true},
		{"response cut", switching[:20], false},
		{"small frames", join(switching, frame(5, false), frame(0, false)), true},
		{"16-bit length", join(switching, frame(300, false)), true},
		{"64-bit length", join(switching, frame(70000, false)), true},
		{"masked", join(switching, frame(10, true)), true},
		{"mid payload", join(switching, frame(300, false))[:len(switching)+100], false},
		{"mid header", join(switching, frame(300, false))[:len(switching)+3], false},
		{"not switching", []byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"), false},
		{"unknown upgrade", []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"), false},
		{"SPDY frames", join(spdySwitching, spdyFrame(0), spdyFrame(5), spdyFrame(70000)), true},
		{"SPDY mid header", join(spdySwitching, spdyFrame(5))[:len(spdySwitching)+6], false},
		{"SPDY mid payload", join(spdySwitching, spdyFrame(300))[:len(spdySwitching)+100], false},
	}
	for _, tt := range tests {
		// Every way of cutting the stream into writes gives the same answer.
		for _, chunk := range []int{1, 3, 7, 64, 1 << 20} {
			var f frameTracker
			for b := tt.stream; len(b) > 0; {
				n := min(chunk, len(b))
				f.feed(b[:n])
				b = b[n:]
			}
			if got := f.atBoundary(); got != tt.boundary {
				t.Errorf("%s in writes of %d: at a boundary = %v, want %v", tt.name, chunk, got, tt.boundary)
			}
		}
	}
}

func TestCloseFrameReasonFits(t *testing.T) {
	for _, reason := range []string{strings.Repeat("é", 100), "recording required: " + strings.Repeat("x", 200) + ": connection refused"} {
		f := closeFrame(closePolicyViolation, reason)
		if len(f) > 2+125 || int(f[1]) != len(f)-2 || !utf8.Valid(f[4:]) {
			t.Errorf("close frame of %d bytes says %d: %q", len(f), f[1], f[4:])
		}
		if got := string(f[4:]); strings.HasPrefix(reason, "recording") &&
			(!strings.HasPrefix(got, "recording required: x") || !strings.HasSuffix(got, "x: connection refused")) {
			t.Errorf("the reason %q lost its start or its cause", got)
		}
	}
}

// TestWebSocketEndsWithCloseFrame ends a session under an open WebSocket
// stream: the client gets a close frame saying why, not a cut connection.
func TestWebSocketEndsWithCloseFrame(t *testing.T) {
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := 0; ; i++ {
			if err := conn.WriteMessage(websocket.BinaryMessage, bytes.Repeat([]byte{'e'}, 1+i%300)); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	r := NewTracker(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	base := serveThroughProxy(t, r, tgt)

	conn, _, err := websocket.DefaultDialer.Dial(strings.Replace(base, "http://", "ws://", 1)+"/proxy/stream", nil)
	must(t, err)
	defer conn.Close()
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	r.End("s1", ErrExpired)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue
		}
		var closed *websocket.CloseError
		if !errors.As(err, &closed) || closed.Code != closePolicyViolation || !strings.Contains(closed.Text, "session sre/fix: the session expired") {
			t.Errorf("the stream ended with %v, want a close frame %d saying the session expired", err, closePolicyViolation)
		}
		return
	}
}

// TestWebSocketToAClientThatStoppedReading ends a session whose client no
// longer reads while the target floods it: the stream must still end, over
// TLS as over plain TCP.
func TestWebSocketToAClientThatStoppedReading(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("TLS %v", withTLS), func(t *testing.T) {
			u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
				conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer conn.Close()
				chunk := bytes.Repeat([]byte{'f'}, 64<<10)
				for conn.WriteMessage(websocket.BinaryMessage, chunk) == nil {
				}
			})
			r := NewTracker(clock.RealClock{}, Limits{})
			tgt := target(u, tr)
			dialer := *websocket.DefaultDialer
			var url string
			if withTLS {
				base, tlsConfig := serveThroughProxyTLS(t, r, tgt)
				dialer.TLSClientConfig = tlsConfig
				url = strings.Replace(base, "https://", "wss://", 1)
			} else {
				url = strings.Replace(serveThroughProxy(t, r, tgt), "http://", "ws://", 1)
			}

			conn, _, err := dialer.Dial(url+"/proxy/stream", nil)
			must(t, err)
			defer conn.Close()
			// Read nothing: the buffers between the proxy and the client fill up.
			time.Sleep(500 * time.Millisecond)
			ended := time.Now()
			r.End("s1", ErrDeleted)
			if !released(r, 10*time.Second) {
				t.Fatal("the stream to a client that stopped reading outlived its session")
			}
			if took := time.Since(ended); took > time.Second {
				t.Errorf("the stream ended %s after the session, want under 1s", took)
			}
		})
	}
}

func TestFrameTrackerSeesTheTargetsCloseFrame(t *testing.T) {
	var f frameTracker
	f.feed([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"))
	f.feed(frame(3, false))
	if f.closing {
		t.Fatal("a data frame taken for a close frame")
	}
	f.feed([]byte{0x88, 2, 0x03, 0xe8})
	if !f.closing {
		t.Error("the target's close frame went unnoticed: a second one would follow")
	}
}

// TestBoundaryIn: the tracker finds where the frame in progress ends in
// the next write, for both protocols, without moving itself.
func TestBoundaryIn(t *testing.T) {
	ws := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
	spdy := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\n")
	tests := []struct {
		name           string
		response, next []byte
	}{
		{"WebSocket", ws, frame(300, false)},
		{"WebSocket, 64-bit length", ws, frame(70000, false)},
		{"SPDY", spdy, spdyFrame(300)},
	}
	for _, tt := range tests {
		// Cut the frame after every length of its header, and in its payload.
		for _, cut := range []int{0, 1, 3, 9, len(tt.next) - 1} {
			var f frameTracker
			f.feed(tt.response)
			f.feed(tt.next[:cut])
			rest := append(append([]byte(nil), tt.next[cut:]...), tt.next...)
			if got, want := f.boundaryIn(rest), len(tt.next)-cut; got != want {
				t.Errorf("%s cut at %d: the frame ends after %d bytes, want %d", tt.name, cut, got, want)
			}
			if got := f.boundaryIn(tt.next[cut : len(tt.next)-1]); cut < len(tt.next)-1 && got != -1 {
				t.Errorf("%s cut at %d: a boundary at %d in a write that ends before the frame", tt.name, cut, got)
			}
			if f.atBoundary() != (cut == 0) {
				t.Errorf("%s cut at %d: boundaryIn moved the tracker", tt.name, cut)
			}
		}
	}
}
