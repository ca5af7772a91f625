// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/spdystream/spdy"
)

const (
	wsResponse   = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
	wsB64Resp    = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: v4.base64.channel.k8s.io\r\n\r\n"
	spdyResponse = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
)

// wsFrame is one WebSocket frame; masked as a client sends it.
func wsFrame(opcode byte, fin, masked bool, payload []byte) []byte {
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	frame := []byte{b0}
	var maskBit byte
	if masked {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		frame = append(frame, maskBit|byte(n))
	case n < 1<<16:
		frame = append(frame, maskBit|126)
		frame = binary.BigEndian.AppendUint16(frame, uint16(n))
	default:
		frame = append(frame, maskBit|127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	if !masked {
		return append(frame, payload...)
	}
	mask := []byte{1, 2, 3, 4}
	frame = append(frame, mask...)
	for i, c := range payload {
		frame = append(frame, c^mask[i%4])
	}
	return frame
}

func channelMessage(channel byte, data string) []byte { return append([]byte{channel}, data...) }

// spdyFrames writes frames with spdystream's own framer, which compresses
// headers as kubectl's does.
func spdyFrames(t *testing.T, frames ...spdy.Frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	framer, err := spdy.NewFramer(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := framer.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func synStream(id spdy.StreamId, streamType string) *spdy.SynStreamFrame {
	return &spdy.SynStreamFrame{StreamId: id, Headers: http.Header{"Streamtype": {streamType}}}
}

func data(id spdy.StreamId, s string) *spdy.DataFrame {
	return &spdy.DataFrame{StreamId: id, Data: []byte(s)}
}

type piece struct {
	fromClient bool
	data       []byte
}

// seen is an event as a test compares it: its data copied out of the
// decoder's memory.
type seen struct {
	kind, data string
}

func decodeAll(pieces []piece) ([]seen, error) {
	var d decoder
	var events []seen
	var err error
	for _, p := range pieces {
		if err = d.feed(p.fromClient, p.data, func(e event) { events = append(events, seen{e.kind, string(e.data)}) }); err != nil {
			break
		}
	}
	return events, err
}

func TestDecoder(t *testing.T) {
	clientSPDY := spdyFrames(t, synStream(1, "error"), synStream(3, "stdin"), synStream(5, "stdout"), synStream(7, "resize"),
		data(7, `{"Width":100,"Height":30}`+"\n"), data(3, "ls\r"))
	serverSPDY := spdyFrames(t, &spdy.SynReplyFrame{StreamId: 1, Headers: http.Header{}}, data(5, "file\r\n"), data(9, "unknown stream"))
	b64 := func(channel byte, s string) []byte {
		return []byte(string('0'+channel) + base64.StdEncoding.EncodeToString([]byte(s)))
	}
	tests := []struct {
		name    string
		pieces  []piece
		want    []seen
		wantErr bool
	}{{
		name: "websocket v5, resize, input, output, stderr, exit",
		pieces: []piece{
			{false, []byte(wsResponse)},
			{false, wsFrame(2, true, false, channelMessage(channelStdout, ""))},
			{true, wsFrame(2, true, true, channelMessage(channelResize, `{"Width":120,"Height":40}`))},
			{true, wsFrame(2, true, true, channelMessage(channelStdin, "echo hi\r"))},
			{false, wsFrame(2, true, false, channelMessage(channelStdout, "hi\r\n"))},
			{false, wsFrame(2, true, false, channelMessage(channelStderr, "oops\r\n"))},
			{true, wsFrame(2, true, true, []byte{channelClose, channelStdin})},
			{false, wsFrame(2, true, false, channelMessage(channelError, `{"metadata":{},"status":"Success"}`))},
			{false, wsFrame(8, true, false, []byte{0x03, 0xe8})},
		},
		want: []seen{{"r", "120x40"}, {"i", "echo hi\r"}, {"o", "hi\r\n"}, {"o", "oops\r\n"}, {"m", "exit: Success"}},
	}, {
		name: "websocket frames split anywhere, fragmented message, ping between",
		pieces: func() []piece {
			stream := append([]byte(wsResponse), wsFrame(2, false, false, channelMessage(channelStdout, "par"))...)
			stream = append(stream, wsFrame(9, true, false, []byte("ping"))...)
			stream = append(stream, wsFrame(0, true, false, []byte("ted"))...)
			stream = append(stream, wsFrame(2, true, false, channelMessage(channelStdout, string(bytes.Repeat([]byte("x"), 300))))...)
			var pieces []piece
			for _, c := range stream {
				pieces = append(pieces, piece{false, []byte{c}})
			}
			return pieces
		}(),
		want: []seen{{"o", "p"}, {"o", "a"}, {"o", "r"}, {"o", "t"}, {"o", "e"}, {"o", "d"}},
	}, {
		name: "websocket base64",
		pieces: []piece{
			{false, []byte(wsB64Resp)},
			{true, wsFrame(1, true, true, b64(channelStdin, "id\n"))},
			{false, wsFrame(1, true, false, b64(channelStdout, "uid=0\n"))},
		},
		want: []seen{{"i", "id\n"}, {"o", "uid=0\n"}},
	}, {
		name:   "spdy, headers compressed across frames",
		pieces: []piece{{false, []byte(spdyResponse)}, {true, clientSPDY}, {false, serverSPDY}},
		want:   []seen{{"r", "100x30"}, {"i", "ls\r"}, {"o", "file\r\n"}},
	}, {
		name:    "not upgraded",
		pieces:  []piece{{false, []byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")}},
		wantErr: true,
	}, {
		name:    "garbled spdy",
		pieces:  []piece{{false, []byte(spdyResponse)}, {true, []byte{0x80, 3, 0, 1, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff}}},
		wantErr: true,
	}, {
		name:    "websocket continuation outside a message",
		pieces:  []piece{{false, []byte(wsResponse)}, {false, wsFrame(0, true, false, []byte("x"))}},
		wantErr: true,
	}, {
		name:    "unknown upgrade",
		pieces:  []piece{{false, []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")}},
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := decodeAll(tt.pieces)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tt.wantErr)
			}
			if tt.name == "websocket frames split anywhere, fragmented message, ping between" {
				// Byte by byte, output comes byte by byte; the 300 x's too.
				events = events[:6]
			}
			if diff := cmp.Diff(tt.want, events, cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecoderNeverPanics feeds truncated, garbled and random streams of
// every protocol: the decoder stops with an error or goes on, never panics.
func TestDecoderNeverPanics(t *testing.T) {
	valid := [][]byte{
		append([]byte(wsResponse), wsFrame(2, true, true, channelMessage(channelResize, `{"Width":1,"Height":2}`))...),
		append([]byte(wsB64Resp), wsFrame(1, true, false, []byte("1!!notbase64"))...),
		append([]byte(spdyResponse), spdyFrames(t, synStream(1, "stdout"), data(1, "hello"))...),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, stream := range valid {
		for range 2000 {
			b := append([]byte(nil), stream...)
			switch rng.IntN(3) {
			case 0: // truncated
				b = b[:rng.IntN(len(b)+1)]
			case 1: // garbled after the response
				for range 1 + rng.IntN(8) {
					b[rng.IntN(len(b))] = byte(rng.IntN(256))
				}
			case 2: // random bytes after the response
				end := bytes.Index(b, []byte("\r\n\r\n")) + 4
				b = b[:end]
				for range rng.IntN(200) {
					b = append(b, byte(rng.IntN(256)))
				}
			}
			var pieces []piece
			for len(b) > 0 {
				n := 1 + rng.IntN(len(b))
				pieces = append(pieces, piece{rng.IntN(2) == 0, b[:n]})
				b = b[n:]
			}
			_, _ = decodeAll(pieces)
		}
	}
}

// TestClientFramesAsTheTargetReadsThem: the client's WebSocket frames are
// decoded as wsstream over golang.org/x/net/websocket reads them, and what
// the target might read otherwise than the recording fails the decoding;
// so do SPDY frames the recording cannot classify.
func TestClientFramesAsTheTargetReadsThem(t *testing.T) {
	b64 := func(channel byte, s string) []byte {
		return []byte(string('0'+channel) + base64.StdEncoding.EncodeToString([]byte(s)))
	}
	ws := func(frames ...[]byte) []piece {
		pieces := []piece{{false, []byte(wsResponse)}}
		for _, f := range frames {
			pieces = append(pieces, piece{true, f})
		}
		return pieces
	}
	stdin := channelMessage(channelStdin, "rm -rf /\r")
	tests := []struct {
		name    string
		pieces  []piece
		want    []seen
		wantErr string
	}{{
		name: "each fragment is a message with its own channel",
		pieces: ws(wsFrame(2, false, true, channelMessage(channelStdout, "x")),
			wsFrame(0, true, true, channelMessage(channelStdin, "id\r"))),
		want: []seen{{"i", "id\r"}},
	}, {
		name: "base64 fragments decode one by one",
		pieces: append([]piece{{false, []byte(wsB64Resp)}}, piece{true, wsFrame(1, false, true, b64(channelStdin, "ab"))},
			piece{true, wsFrame(0, true, true, b64(channelStdin, "cd"))}),
		want: []seen{{"i", "ab"}, {"i", "cd"}},
	}, {
		name: "channels that do not flow that way are dropped, as their readers drop them",
		pieces: []piece{{false, []byte(wsResponse)},
			{true, wsFrame(2, true, true, channelMessage(channelStdout, "forged output"))},
			{true, wsFrame(2, true, true, channelMessage(channelError, `{"status":"Success"}`))},
			{false, wsFrame(2, true, false, channelMessage(channelStdin, "forged input"))},
			{true, wsFrame(2, true, true, channelMessage(channelStdin, "id\r"))}},
		want: []seen{{"i", "id\r"}},
	}, {
		name: "SPDY streams that do not flow that way are dropped",
		pieces: []piece{{false, []byte(spdyResponse)},
			{true, spdyFrames(t, synStream(1, "stdin"), synStream(3, "stdout"), data(3, "forged output"), data(1, "id\r"))},
			{false, spdyFrames(t, data(1, "forged input"))}},
		want: []seen{{"i", "id\r"}},
	}, {
		name:    "reserved control opcode, which the target reads as data",
		pieces:  ws(wsFrame(11, true, true, stdin)),
		wantErr: "reserved opcode",
	}, {
		name:    "reserved data opcode",
		pieces:  ws(wsFrame(3, true, true, stdin)),
		wantErr: "reserved opcode",
	}, {
		name:    "RSV bits",
		pieces:  ws(func() []byte { f := wsFrame(2, true, true, stdin); f[0] |= 0x40; return f }()),
		wantErr: "RSV bits",
	}, {
		name:    "unmasked",
		pieces:  ws(wsFrame(2, true, false, stdin)),
		wantErr: "unmasked client frame",
	}, {
		name:    "control frame over 125 bytes",
		pieces:  ws(wsFrame(9, true, true, bytes.Repeat([]byte("p"), 126))),
		wantErr: "malformed control frame",
	}, {
		name:    "fragmented control frame",
		pieces:  ws(wsFrame(9, false, true, []byte("p"))),
		wantErr: "malformed control frame",
	}, {
		name:    "over the target's 32 MiB",
		pieces:  ws([]byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0x02, 0, 0, 1, 1, 2, 3, 4, 0}),
		wantErr: "frame too long",
	}, {
		name:    "64-bit length with its top bit set",
		pieces:  ws([]byte{0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3, 4}),
		wantErr: "top bit",
	}, {
		name:    "bytes after the client's close frame",
		pieces:  ws(append(wsFrame(8, true, true, []byte{0x03, 0xe8}), wsFrame(2, true, true, stdin)...)),
		wantErr: "after the client's close frame",
	}, {
		name:    "SPDY stream of an unknown type",
		pieces:  []piece{{false, []byte(spdyResponse)}, {true, spdyFrames(t, synStream(1, "stdin2"), data(1, "id\r"))}},
		wantErr: "unknown streamType",
	}, {
		name:    "SPDY stream opened twice",
		pieces:  []piece{{false, []byte(spdyResponse)}, {true, spdyFrames(t, synStream(1, "stdout"), synStream(1, "stdin"))}},
		wantErr: "opened twice",
	}, {
		name:    "SPDY data for a stream never opened",
		pieces:  []piece{{false, []byte(spdyResponse)}, {true, spdyFrames(t, synStream(1, "stdin"), data(3, "id\r"))}},
		wantErr: "no SYN_STREAM opened",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := decodeAll(tt.pieces)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v (events %v), want one saying %q", err, events, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, events, cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
