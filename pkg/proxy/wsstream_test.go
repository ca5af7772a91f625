// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/spdystream/spdy"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"

	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"
)

// runHeader names each test stream, so that the target tells which one
// its standard input belongs to.
const runHeader = "X-Test-Run"

// stdinSink collects what each stream's command read on standard input.
type stdinSink struct {
	mu   sync.Mutex
	runs map[string]chan []byte
}

func (s *stdinSink) run(id string) chan []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[string]chan []byte{}
	}
	if s.runs[id] == nil {
		s.runs[id] = make(chan []byte, 1)
	}
	return s.runs[id]
}

// wait returns what the command of run id read, once the target stopped
// reading; ok is false when the target never served it.
func (s *stdinSink) wait(id string, timeout time.Duration) (stdin []byte, ok bool) {
	select {
	case stdin = <-s.run(id):
		return stdin, true
	case <-time.After(timeout):
		return nil, false
	}
}

// kubeletExecTarget serves exec as kube-apiserver's stream translator and
// the kubelet do: WebSocket with k8s.io/streaming's wsstream over
// golang.org/x/net/websocket (v5.channel.k8s.io, v4.base64.channel.k8s.io),
// SPDY with its spdystream upgrader (v4.channel.k8s.io, streams by their
// streamType). What standard input carried goes to the sink.
func kubeletExecTarget(t testing.TB) (Target, *stdinSink) {
	t.Helper()
	sink := &stdinSink{}
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		var stdin bytes.Buffer
		defer func() { sink.run(r.Header.Get(runHeader)) <- stdin.Bytes() }()
		if wsstream.IsWebSocketRequest(r) {
			channels := []wsstream.ChannelType{wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.ReadChannel}
			conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
				"v5.channel.k8s.io":        {Binary: true, Channels: channels},
				"v4.base64.channel.k8s.io": {Binary: false, Channels: channels},
			})
			_, rwc, err := conn.Open(w, r)
			if err != nil {
				return
			}
			defer conn.Close()
			go func() { _, _ = io.Copy(io.Discard, rwc[channelResize]) }()
			_, _ = io.Copy(&stdin, rwc[0])
			return
		}
		if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
			return
		}
		streams := make(chan httpstream.Stream, 16)
		conn := streamspdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			streams <- s
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		for {
			select {
			case s := <-streams:
				if s.Headers().Get("streamType") == "stdin" {
					_, _ = io.Copy(&stdin, s)
					return
				}
				go func() { _, _ = io.Copy(io.Discard, s) }()
			case <-conn.CloseChan():
				return
			}
		}
	})
	return target(u, tr), sink
}

// channelResize is the resize channel of the channel protocols.
const channelResize = 4

// rawExec sends an exec upgrade request with body to the proxy at base
// (ws://) on a connection of its own, then stream, and closes it after
// linger. It returns the status of the answer.
func rawExec(t testing.TB, base, run, upgrade string, body, stream []byte, linger time.Duration) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "ws://"))
	must(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// WebSocket clients GET, SPDY ones POST, as kubectl does.
	method := http.MethodPost
	if strings.Contains(upgrade, "websocket") {
		method = http.MethodGet
	}
	head := method + " /proxy" + execPath + " HTTP/1.1\r\nHost: clustergate\r\nConnection: Upgrade\r\n" + upgrade + runHeader + ": " + run + "\r\n"
	if len(body) > 0 {
		head += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(conn, head+"\r\n"+string(body)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the answer to the upgrade: %v", err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// What the target or the proxy sends back is not read: the stream
		// ends when the client closes it, the target or the proxy cuts it.
		_, _ = conn.Write(stream)
		time.Sleep(linger)
	}
	return resp.StatusCode
}

// webSocketUpgrade asks for the v5 channel protocol, or its base64 form.
func webSocketUpgrade(base64 bool) string {
	protocol := "v5.channel.k8s.io"
	if base64 {
		protocol = "v4.base64.channel.k8s.io"
	}
	return "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: " + protocol + "\r\n"
}

const spdyUpgrade = "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"

// recordedInput waits until the session's recorded stream, if it has one,
// is finished and returns its manifest and the input its asciicast shows.
func recordedInput(t testing.TB, s store.Store) (v1alpha1.RecordingManifest, []byte) {
	t.Helper()
	reader := recording.Reader{Store: s}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		streams, err := reader.Streams(ctx, "sre", "fix")
		must(t, err)
		if len(streams) > 1 {
			t.Fatalf("%d recorded streams, want 1", len(streams))
		}
		if len(streams) == 0 {
			return v1alpha1.RecordingManifest{}, nil
		}
		if streams[0].Manifest != nil {
			m := *streams[0].Manifest
			if m.Failed != "" {
				return m, nil
			}
			cast, err := reader.OpenCast(ctx, "sre", "fix", streams[0].Stream, true) // the manifest is unsigned: no key here
			must(t, err)
			var out bytes.Buffer
			must(t, cast.Write(ctx, &out))
			return m, castInput(t, out.Bytes())
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording was not finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// castInput is what the input events of an asciicast carry, in order.
func castInput(t testing.TB, cast []byte) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(cast), []byte("\n"))
	var input []byte
	for _, line := range lines[1:] {
		var e []any
		if err := json.Unmarshal(line, &e); err != nil || len(e) != 3 {
			t.Fatalf("cast event %s: %v", line, err)
		}
		if e[1] == "i" {
			input = append(input, e[2].(string)...)
		}
	}
	return input
}

// ascii keeps the ASCII bytes of b: the asciicast writes invalid UTF-8
// as U+FFFD, message by message.
func ascii(b []byte) []byte {
	var out []byte
	for _, c := range b {
		if c < 0x80 {
			out = append(out, c)
		}
	}
	return out
}

// isSubsequence says whether every byte of sub appears in s, in order.
func isSubsequence(sub, s []byte) bool {
	for _, c := range sub {
		i := bytes.IndexByte(s, c)
		if i < 0 {
			return false
		}
		s = s[i+1:]
	}
	return true
}

// execOutcome is how a recorded exec ended.
type execOutcome struct {
	status   int
	served   bool
	stdin    []byte
	manifest v1alpha1.RecordingManifest
	input    []byte
}

// recordedExec sends an exec with body and stream through a proxy that
// must record it (a local store) to tgt, and reports what the command read
// and what the recording shows. SPDY streams linger before the client
// closes: spdystream drops the data it has not handed to a stream when its
// connection closes.
func recordedExec(t testing.TB, tgt Target, sink *stdinSink, upgrade string, body, stream []byte) execOutcome {
	t.Helper()
	local, err := store.NewLocal(t.TempDir())
	must(t, err)
	base := recordingProxy(t, recording.New(recording.Config{Store: local, Mode: recording.ModeRequired, FlushInterval: 10 * time.Millisecond}), tgt)
	run := fmt.Sprint(runs.Add(1))
	var o execOutcome
	var linger time.Duration
	if upgrade == spdyUpgrade {
		linger = 200 * time.Millisecond
	}
	o.status = rawExec(t, base, run, upgrade, body, stream, linger)
	wait := 10 * time.Second
	if o.status != http.StatusSwitchingProtocols {
		// The target may still have been asked.
		wait = 100 * time.Millisecond
	}
	o.stdin, o.served = sink.wait(run, wait)
	if !o.served && o.status == http.StatusSwitchingProtocols {
		t.Fatal("the target did not finish the stream")
	}
	o.manifest, o.input = recordedInput(t, local)
	return o
}

var runs atomic.Int64

// checkRecorded: every byte the command read on standard input is in the
// recording's input, in order, or the stream was refused or its recording
// failed (and so, under --recording=required, it was cut).
func checkRecorded(t testing.TB, o execOutcome) {
	t.Helper()
	switch {
	case o.status != http.StatusSwitchingProtocols && len(o.stdin) > 0:
		t.Errorf("refused with %d, yet the command read %q", o.status, o.stdin)
	case o.status != http.StatusSwitchingProtocols, o.manifest.Failed != "":
	case !isSubsequence(ascii(o.stdin), ascii(o.input)):
		t.Errorf("the command read %q, the recording shows %q as input (manifest %+v)", o.stdin, o.input, o.manifest)
	}
}

// clientFrames turns script into WebSocket frames as a client might send
// them. Each frame takes from script a first header byte as is (FIN, RSV
// bits, opcode); a second whose top bit masks the frame and whose low two
// bits pick how its length is written (7 bits when it fits, 16, 64, or 64
// with the top bit set); a length byte and that many payload bytes (fewer
// at the end of script).
func clientFrames(script []byte) []byte {
	var out []byte
	for len(script) >= 3 {
		b0, b1, n := script[0], script[1], int(script[2])
		script = script[3:]
		payload := script[:min(n, len(script))]
		script = script[len(payload):]
		var mask byte
		if b1&0x80 != 0 {
			mask = 0x80
		}
		out = append(out, b0)
		switch b1 & 3 {
		case 0:
			if len(payload) < 126 {
				out = append(out, mask|byte(len(payload)))
				break
			}
			fallthrough
		case 1:
			out = binary.BigEndian.AppendUint16(append(out, mask|126), uint16(len(payload)))
		case 2:
			out = binary.BigEndian.AppendUint64(append(out, mask|127), uint64(len(payload)))
		case 3:
			out = binary.BigEndian.AppendUint64(append(out, mask|127), 1<<63|uint64(len(payload)))
		}
		if mask == 0 {
			out = append(out, payload...)
			continue
		}
		key := []byte{0x37, 0xfa, 0x21, 0x3d}
		out = append(out, key...)
		for i, c := range payload {
			out = append(out, c^key[i%4])
		}
	}
	return out
}

// frameScript is one frame of clientFrames' script: FIN and binary,
// masked, with a 7-bit length.
func frameScript(b0 byte, payload string) []byte {
	return append([]byte{b0, 0x80, byte(len(payload))}, payload...)
}

// knownBypasses are the ways stdin reached the target and not the
// recording (issue #41), as FuzzRecordedWebSocket's arguments.
var knownBypasses = []struct {
	name           string
	base64         bool
	body, script   []byte
	refused        bool
	failed, wanted string
}{{
	name:   "reserved opcode, read as data by the target",
	script: frameScript(0x8b, "\x00id\n"),
	failed: "reserved opcode",
}, {
	name:   "fragment with a channel of its own",
	script: append(frameScript(0x02, "\x01x"), frameScript(0x80, "\x00id\n")...),
	wanted: "id\n",
}, {
	name:    "frames in the upgrade request's body",
	body:    clientFrames(frameScript(0x82, "\x00id\n")),
	refused: true,
}}

// TestRecordedWebSocketBypasses sends the known bypasses through the proxy
// to a real wsstream target: each is refused, fails its recording (and so
// is cut), or is recorded as the command read it.
func TestRecordedWebSocketBypasses(t *testing.T) {
	tgt, sink := kubeletExecTarget(t)
	for _, tt := range knownBypasses {
		t.Run(tt.name, func(t *testing.T) {
			o := recordedExec(t, tgt, sink, webSocketUpgrade(tt.base64), tt.body, clientFrames(tt.script))
			checkRecorded(t, o)
			switch {
			case tt.refused:
				if o.status != http.StatusBadRequest || o.served {
					t.Errorf("answered %d, the target asked: %v; want 400 before the target", o.status, o.served)
				}
			case tt.failed != "":
				if !strings.Contains(o.manifest.Failed, tt.failed) {
					t.Errorf("the manifest says failed %q, want %q", o.manifest.Failed, tt.failed)
				}
			default:
				if o.manifest.Failed != "" || string(o.input) != tt.wanted || string(o.stdin) != tt.wanted {
					t.Errorf("the command read %q, the recording shows %q (failed %q); want %q in both", o.stdin, o.input, o.manifest.Failed, tt.wanted)
				}
			}
		})
	}
}

// TestRecordedSPDY sends what the recording cannot classify through the
// proxy to a real spdystream target: SYN_STREAMs in the upgrade's body are
// refused, streams of unknown type and data for unknown streams fail the
// recording; an ordinary stdin stream is recorded.
func TestRecordedSPDY(t *testing.T) {
	tgt, sink := kubeletExecTarget(t)
	frames := func(fs ...spdy.Frame) []byte {
		var buf bytes.Buffer
		framer, err := spdy.NewFramer(&buf, nil)
		must(t, err)
		for _, f := range fs {
			must(t, framer.WriteFrame(f))
		}
		return buf.Bytes()
	}
	syn := func(id spdy.StreamId, streamType string) *spdy.SynStreamFrame {
		return &spdy.SynStreamFrame{StreamId: id, Headers: http.Header{"Streamtype": {streamType}}}
	}
	data := func(id spdy.StreamId, s string, fin bool) *spdy.DataFrame {
		f := &spdy.DataFrame{StreamId: id, Data: []byte(s)}
		if fin {
			f.Flags = spdy.DataFlagFin
		}
		return f
	}
	tests := []struct {
		name         string
		body, stream []byte
		status       int
		failed       string
		wanted       string
	}{{
		name:   "SYN_STREAM and data in the upgrade request's body",
		body:   frames(syn(1, "stdin"), data(1, "id\n", true)),
		status: http.StatusBadRequest,
	}, {
		name:   "stream of an unknown type",
		stream: frames(syn(1, "stdin "), data(1, "id\n", true)),
		status: http.StatusSwitchingProtocols,
		failed: "unknown streamType",
	}, {
		name:   "data for a stream never opened",
		stream: frames(syn(1, "stdout"), data(3, "id\n", true)),
		status: http.StatusSwitchingProtocols,
		failed: "no SYN_STREAM opened",
	}, {
		name:   "stdin",
		stream: frames(syn(1, "stdin"), data(1, "id\n", true)),
		status: http.StatusSwitchingProtocols,
		wanted: "id\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := recordedExec(t, tgt, sink, spdyUpgrade, tt.body, tt.stream)
			checkRecorded(t, o)
			if o.status != tt.status {
				t.Fatalf("answered %d, want %d", o.status, tt.status)
			}
			if tt.status != http.StatusSwitchingProtocols && o.served {
				t.Error("the target was asked")
			}
			if !strings.Contains(o.manifest.Failed, tt.failed) {
				t.Errorf("the manifest says failed %q, want %q", o.manifest.Failed, tt.failed)
			}
			if tt.wanted != "" && (string(o.input) != tt.wanted || string(o.stdin) != tt.wanted) {
				t.Errorf("the command read %q, the recording shows %q; want %q in both", o.stdin, o.input, tt.wanted)
			}
		})
	}
}

// FuzzRecordedWebSocket sends random client frames (and upgrade bodies)
// through a proxy that must record them to a real wsstream target: every
// byte the command reads on standard input is in the recording, in order,
// or the stream was refused or its recording failed.
func FuzzRecordedWebSocket(f *testing.F) {
	for _, tt := range knownBypasses {
		f.Add(tt.base64, tt.body, tt.script)
	}
	f.Add(false, []byte(nil), append(frameScript(0x82, "\x04{\"Width\":80,\"Height\":24}"), frameScript(0x82, "\x00ls\n")...))
	f.Add(true, []byte(nil), append(frameScript(0x81, "0bHMK"), frameScript(0x81, "0aWQK")...))
	f.Add(false, []byte(nil), append(frameScript(0x82, "\xff\x00"), frameScript(0x82, "\x00id\n")...))
	f.Add(false, []byte(nil), append(frameScript(0x88, "\x03\xe8"), frameScript(0x82, "\x00id\n")...))
	f.Add(false, []byte(nil), []byte{0x82, 0x00, 4, 0, 'i', 'd', '\n'})
	tgt, sink := kubeletExecTarget(f)
	f.Fuzz(func(t *testing.T, base64 bool, body, script []byte) {
		checkRecorded(t, recordedExec(t, tgt, sink, webSocketUpgrade(base64), body, clientFrames(script)))
	})
}
