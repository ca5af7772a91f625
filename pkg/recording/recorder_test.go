// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/recording/store"
)

var testSession = Session{Namespace: "sre", Name: "fix", UID: "uid-1", Owner: "alice", Target: "shoot/local", Reason: "INC-1"}

func newTestRecorder(t *testing.T, s store.Store, policy Policy) *Recorder {
	t.Helper()
	return New(Config{Store: s, Policy: policy, Replica: "r1", FlushInterval: time.Hour, Clock: clocktesting.NewFakeClock(time.Unix(1700000000, 0))})
}

func TestRecordAndReadBack(t *testing.T) {
	ctx := context.Background()
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRecorder(t, local, PolicyBestEffort)
	s, err := r.OpenStream(ctx, StreamInfo{Session: testSession, Subresource: "exec", Pod: "p", Command: []string{"sh"}, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	s.ToClient([]byte(wsResponse))
	s.FromClient(wsFrame(2, true, true, channelMessage(channelResize, `{"Width":100,"Height":20}`)))
	s.FromClient(wsFrame(2, true, true, channelMessage(channelStdin, "echo h\xc3")))
	s.FromClient(wsFrame(2, true, true, channelMessage(channelStdin, "\xa9\r")))
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "hé\r\n")))
	s.Close()
	s.Wait()
	r.LogRequest(testSession, Request{Method: "GET", Path: "/api/v1/pods", Query: "watch=1&access_token=secret", Status: 200})
	r.LogRequest(testSession, Request{Method: "POST", Path: "/api/v1/namespaces/x/pods/p/exec", Stream: s.ID(), Status: 101})
	r.flushRequests(ctx)

	reader := Reader{Store: local}
	streams, err := reader.Streams(ctx, "sre", "fix")
	if err != nil || len(streams) != 1 {
		t.Fatalf("streams: %v, %v", streams, err)
	}
	cast, err := reader.Cast(ctx, "sre", "fix", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	m := streams[0].Manifest
	sum := sha256.Sum256(cast)
	if m == nil || m.Length != int64(len(cast)) || m.SHA256 != hex.EncodeToString(sum[:]) || m.Failed != "" || m.Protocol != "v5.channel.k8s.io" {
		t.Errorf("manifest %+v does not describe the cast of %d bytes", m, len(cast))
	}
	scanner := bufio.NewScanner(bytes.NewReader(cast))
	scanner.Scan()
	var header struct {
		Version, Width, Height int
		Clustergate            StreamInfo
	}
	if err := json.Unmarshal(scanner.Bytes(), &header); err != nil {
		t.Fatal(err)
	}
	if header.Version != 2 || header.Width != 100 || header.Height != 20 || header.Clustergate.Owner != "alice" || header.Clustergate.Pod != "p" {
		t.Errorf("header %+v", header)
	}
	var got []string
	for scanner.Scan() {
		var e []any
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e[1].(string)+" "+e[2].(string))
	}
	if diff := cmp.Diff([]string{"r 100x20", "i echo h", "i é\r", "o hé\r\n"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	requests, err := reader.Requests(ctx, "sre", "fix")
	if err != nil || len(requests) != 2 {
		t.Fatalf("requests: %v, %v", requests, err)
	}
	if strings.Contains(requests[0].Query, "secret") || requests[1].Stream != s.ID() || requests[0].Replica != "r1" {
		t.Errorf("request log %+v", requests)
	}
	if _, err := reader.Cast(ctx, "sre", "fix", "../../x"); !errors.Is(err, ErrNoStream) {
		t.Errorf("a key outside the session: %v", err)
	}
}

// TestManifestOfKeptAndReadBackChunks: the manifest describes the stored
// asciicast and capture whether its chunks were kept, as a short stream's
// are, or read back from the store, as a long one's are.
func TestManifestOfKeptAndReadBackChunks(t *testing.T) {
	for _, tt := range []struct {
		name      string
		output    int
		wantReads int32
	}{
		{"short, kept", 100, 0},
		{"long, read back", keptBytes + 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			counted := &countingStore{Store: local}
			r := newTestRecorder(t, counted, PolicyBestEffort)
			s, err := r.OpenStream(ctx, StreamInfo{Session: testSession, Subresource: "exec", Pod: "p", Command: []string{"sh"}})
			if err != nil {
				t.Fatal(err)
			}
			s.ToClient([]byte(wsResponse))
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, strings.Repeat("x", tt.output))))
			s.Close()
			s.Wait()
			if got := counted.gets.Load(); got != tt.wantReads {
				t.Errorf("%d chunks read back, want %d", got, tt.wantReads)
			}
			reader := Reader{Store: local}
			streams, err := reader.Streams(ctx, "sre", "fix")
			if err != nil || len(streams) != 1 || streams[0].Manifest == nil {
				t.Fatalf("streams: %+v, %v", streams, err)
			}
			cast, err := reader.Cast(ctx, "sre", "fix", s.ID())
			if err != nil {
				t.Fatal(err)
			}
			var capture []byte
			for i := range streams[0].Manifest.Chunks {
				chunk, err := local.Get(ctx, chunkKey(s.prefix, i+1))
				if err != nil {
					t.Fatal(err)
				}
				capture = append(capture, chunk...)
			}
			m, castSum, captureSum := streams[0].Manifest, sha256.Sum256(cast), sha256.Sum256(capture)
			if m.Length != int64(len(cast)) || m.SHA256 != hex.EncodeToString(castSum[:]) ||
				m.CaptureLength != int64(len(capture)) || m.CaptureSHA256 != hex.EncodeToString(captureSum[:]) || m.Failed != "" {
				t.Errorf("manifest %+v does not describe the cast of %d bytes and the capture of %d", m, len(cast), len(capture))
			}
		})
	}
}

// failingStore fails every write.
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error { return errors.New("disk full") }

func TestPolicyWhenTheStoreFails(t *testing.T) {
	ctx := context.Background()
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestRecorder(t, failingStore{local}, PolicyRequired).OpenStream(ctx, StreamInfo{Session: testSession}); err == nil {
		t.Error("required: a stream opened although the store cannot be written")
	}
	s, err := newTestRecorder(t, failingStore{local}, PolicyBestEffort).OpenStream(ctx, StreamInfo{Session: testSession})
	if err != nil || s.Recording() {
		t.Errorf("best-effort: %v, recording %v", err, s != nil && s.Recording())
	}
	if New(Config{Store: local, Policy: PolicyOff}) != nil {
		t.Error("off: a recorder")
	}

	// Required and failing mid-way: the relay is told.
	switching := &switchStore{Store: local}
	r := newTestRecorder(t, switching, PolicyRequired)
	s, err = r.OpenStream(ctx, StreamInfo{Session: testSession})
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan error, 1)
	s.OnFailure(func(err error) { told <- err })
	switching.fail = true
	s.ToClient([]byte(wsResponse))
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "x")))
	s.Close()
	s.Wait()
	select {
	case err := <-told:
		if !strings.Contains(err.Error(), "recording required") {
			t.Errorf("told %v", err)
		}
	default:
		t.Error("the relay was not told that the recording failed")
	}
}

type switchStore struct {
	store.Store
	fail bool
}

func (s *switchStore) Put(ctx context.Context, key string, data []byte) error {
	if s.fail {
		return errors.New("unreachable")
	}
	return s.Store.Put(ctx, key, data)
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Add(48 * time.Hour))
	r := New(Config{Store: local, Policy: PolicyBestEffort, Retention: 24 * time.Hour, Clock: clk})
	for _, key := range []string{"sre/old/u1/requests/a.jsonl", "sre/old/u1/streams/s/info.json"} {
		if err := local.Put(ctx, key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	r.sweep(ctx)
	objects, err := local.List(ctx, "")
	if err != nil || len(objects) != 0 {
		t.Errorf("left after sweep: %v, %v", objects, err)
	}
}

// BenchmarkLogRequest measures what the request log adds to each proxied
// request: one line, as a GET of one object makes it.
func BenchmarkLogRequest(b *testing.B) {
	local, err := store.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := New(Config{Store: local, Policy: PolicyBestEffort, Replica: "r1", FlushInterval: time.Hour})
	req := Request{Time: time.Now(), Way: "aggregated", Method: "GET", Path: "/api/v1/namespaces/default/pods/p",
		Query: "timeout=32s", Status: 200, BytesOut: 3210, Duration: "4ms", UserAgent: "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef0"}
	b.ReportAllocs()
	for i := range b.N {
		r.LogRequest(testSession, req)
		if i%10000 == 0 {
			r.flushRequests(context.Background())
		}
	}
}

// BenchmarkStream measures the recording alone: a v5.channel.k8s.io
// stream of terminal output (lines ending in CR LF) handed over in reads of
// 16 KiB, as a TLS connection returns them, captured and written to a
// local store. cpu-ns/B is the CPU the process spends per byte until every
// byte is stored, finish-cpu-ns/B what building the asciicast for the
// manifest takes after the stream ended.
func BenchmarkStream(b *testing.B) {
	const line = "drwxr-xr-x 2 root root 4096 Dec  1 22:40 bin\r\n"
	for _, masked := range []bool{false, true} {
		frame := wsFrame(2, true, masked, channelMessage(channelStdout, strings.Repeat(line, 256<<10/len(line))))
		b.Run(map[bool]string{false: "output", true: "masked"}[masked], func(b *testing.B) {
			local, err := store.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			counted := &countingStore{Store: local}
			r := New(Config{Store: counted, Policy: PolicyBestEffort})
			s, err := r.OpenStream(context.Background(), StreamInfo{Session: testSession, Subresource: "exec", Pod: "p"})
			if err != nil {
				b.Fatal(err)
			}
			s.ToClient([]byte(wsResponse))
			b.SetBytes(int64(len(frame)))
			cpu := processCPU(b)
			for range b.N {
				for off := 0; off < len(frame); off += 16 << 10 {
					s.ToClient(frame[off:min(off+16<<10, len(frame))])
				}
			}
			for counted.stored.Load() < int64(b.N*len(frame)) {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			stored := processCPU(b)
			s.Close()
			s.Wait()
			b.ReportMetric(float64(stored-cpu)/float64(b.N*len(frame)), "cpu-ns/B")
			b.ReportMetric(float64(processCPU(b)-stored)/float64(b.N*len(frame)), "finish-cpu-ns/B")
		})
	}
}

// countingStore counts the bytes written and the reads.
type countingStore struct {
	store.Store
	stored atomic.Int64
	gets   atomic.Int32
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) Put(ctx context.Context, key string, data []byte) error {
	err := s.Store.Put(ctx, key, data)
	s.stored.Add(int64(len(data)))
	return err
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
