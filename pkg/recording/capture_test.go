// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type record struct {
	At         time.Duration
	FromClient bool
	Data       string
}

func readRecords(chunk []byte) ([]record, error) {
	var records []record
	err := readCapture(chunk, func(at time.Duration, fromClient bool, data []byte) error {
		records = append(records, record{at, fromClient, string(data)})
		return nil
	})
	return records, err
}

func TestCaptureFormat(t *testing.T) {
	want := []record{{0, false, "answer"}, {1500 * time.Microsecond, true, "typed"}, {time.Hour, false, strings.Repeat("x", 300)}, {time.Hour, true, ""}}
	chunk := []byte(captureMagic)
	for _, r := range want {
		chunk = appendRecord(chunk, r.At, r.FromClient, []byte(r.Data))
	}
	got, err := readRecords(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if got, err := readRecords([]byte(captureMagic)); err != nil || len(got) != 0 {
		t.Errorf("an empty chunk: %v, %v", got, err)
	}

	for _, tt := range []struct {
		name  string
		chunk string
	}{
		{"no magic", "\x00\x01\x01a"},
		{"another version", "clustergate-capture/2\n"},
		{"bad direction", captureMagic + "\x02\x01\x01a"},
		{"no time", captureMagic + "\x00"},
		{"time overflows", captureMagic + "\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01a"},
		{"time past int64", captureMagic + "\x00\xff\xff\xff\xff\xff\xff\xff\xff\x80\x01\x01a"},
		{"no length", captureMagic + "\x00\x01"},
		{"cut short", captureMagic + "\x00\x01\x05abc"},
		{"length overflows", captureMagic + "\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := readRecords([]byte(tt.chunk)); !errors.Is(err, errBadCapture) {
				t.Errorf("error %v, want a bad capture", err)
			}
		})
	}
}

// FuzzReadCapture: any chunk reads without a panic, and what it reads
// writes back as the same chunk.
func FuzzReadCapture(f *testing.F) {
	f.Add(appendRecord([]byte(captureMagic), time.Second, true, []byte("typed")))
	f.Add([]byte(captureMagic + "\x01\x80\x01\x02ab"))
	f.Fuzz(func(t *testing.T, chunk []byte) {
		records, err := readRecords(chunk)
		if err != nil {
			return
		}
		again := []byte(captureMagic)
		for _, r := range records {
			again = appendRecord(again, r.At, r.FromClient, []byte(r.Data))
		}
		if got, err := readRecords(again); err != nil || !cmp.Equal(records, got) {
			t.Errorf("%q reads as %v, written back as %v, %v", chunk, records, got, err)
		}
	})
}

func TestKeptAnswer(t *testing.T) {
	for _, tt := range []struct {
		name, answer, kept string
		upgraded           bool
	}{
		{"websocket",
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\nSet-Cookie: session=secret\r\n\r\n",
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-Websocket-Protocol: v5.channel.k8s.io\r\n\r\n", true},
		{"spdy",
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nWww-Authenticate: Basic\r\n\r\n",
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n", true},
		{"refused", "HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\n", "HTTP/1.1 403 Forbidden\r\n\r\n", false},
		{"garbage", "SSH-2.0\r\n\r\n", unreadableAnswer, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kept, upgraded := keptAnswer([]byte(tt.answer))
			if string(kept) != tt.kept || upgraded != tt.upgraded {
				t.Errorf("kept %q, upgraded %v; want %q, %v", kept, upgraded, tt.kept, tt.upgraded)
			}
		})
	}
}

// TestCaptureKeepsNoHeaders: of the answer to the upgrade, the store holds
// the status and the protocol, not a cookie.
func TestCaptureKeepsNoHeaders(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	s := openExecStream(t, local)
	answer := strings.Replace(wsResponse, "\r\n\r\n", "\r\nSet-Cookie: session=secret\r\n\r\n", 1)
	s.ToClient([]byte(answer[:20]))
	s.ToClient([]byte(answer[20:] + string(wsFrame(2, true, false, channelMessage(channelStdout, "out")))))
	s.Close()
	s.Wait()
	objects, err := local.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		data, err := local.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "secret") {
			t.Errorf("%s holds the cookie: %q", o.Key, data)
		}
	}
	cast, err := readCast(ctx, testReader(local), s.ID())
	if err != nil || !strings.Contains(string(cast), `"o", "out"`) {
		t.Errorf("cast %q, %v", cast, err)
	}
}

// TestRenderNeverPanics renders garbled and cut chunks of a recording:
// an error or a shorter asciicast, never a panic.
func TestRenderNeverPanics(t *testing.T) {
	chunk := []byte(captureMagic)
	chunk = appendRecord(chunk, 0, false, []byte(wsResponse))
	chunk = appendRecord(chunk, time.Millisecond, true, wsFrame(2, true, true, channelMessage(channelStdin, "typed")))
	chunk = appendRecord(chunk, 2*time.Millisecond, false, wsFrame(2, true, false, channelMessage(channelStdout, "typed\r\n")))
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		b := append([]byte(nil), chunk...)
		for range rng.IntN(6) {
			b[len(captureMagic)+rng.IntN(len(b)-len(captureMagic))] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 {
			b = b[:rng.IntN(len(b)+1)]
		}
		var out bytes.Buffer
		_ = renderCast(&castWriter{}, 2, func(int) ([]byte, error) { return b, nil }, &out)
	}
}
