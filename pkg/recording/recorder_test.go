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

// newLocalStore is a local store in the test's directory.
func newLocalStore(t *testing.T) *store.Local {
	t.Helper()
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return local
}

// openExecStream opens a best-effort recording of an exec stream of the
// test session in st.
func openExecStream(t *testing.T, st store.Store) *Stream {
	t.Helper()
	s, err := newTestRecorder(t, st, PolicyBestEffort).OpenStream(context.Background(), StreamInfo{Session: testSession, Subresource: "exec"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordAndReadBack(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
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
	cast, err := readCast(ctx, reader, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	m := streams[0].Manifest
	chunks := storedChunks(t, local)
	sum := sha256.Sum256(bytes.Join(chunks, nil))
	if m == nil || m.Chunks != len(chunks) || m.CaptureLength != streams[0].Bytes || m.CaptureSHA256 != hex.EncodeToString(sum[:]) ||
		m.Failed != "" || m.Protocol != "v5.channel.k8s.io" {
		t.Errorf("manifest %+v does not describe the %d chunks of %d bytes stored", m, len(chunks), streams[0].Bytes)
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
	requests, err := allRequests(ctx, reader, 0)
	if err != nil || len(requests) != 2 {
		t.Fatalf("requests: %v, %v", requests, err)
	}
	if strings.Contains(requests[0].Query, "secret") || requests[1].Stream != s.ID() || requests[0].Replica != "r1" {
		t.Errorf("request log %+v", requests)
	}
	if _, err := readCast(ctx, reader, "../../x"); !errors.Is(err, ErrNoStream) {
		t.Errorf("a key outside the session: %v", err)
	}
}

// readCast returns the asciicast of a stream of the test session.
func readCast(ctx context.Context, reader Reader, stream string) ([]byte, error) {
	cast, err := reader.OpenCast(ctx, testSession.Namespace, testSession.Name, stream)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = cast.Write(ctx, &out)
	return out.Bytes(), err
}

// storedChunks returns the chunk objects of the one stream in local.
func storedChunks(t *testing.T, local *store.Local) [][]byte {
	t.Helper()
	objects, err := local.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var chunks [][]byte
	for _, o := range objects {
		if _, object, ok := streamObject(o.Key); ok && strings.HasPrefix(object, chunkPrefix) {
			data, err := local.Get(context.Background(), o.Key)
			if err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, data)
		}
	}
	return chunks
}

// TestCastChecksTheManifest: a finished recording is read only when its
// chunks are those the manifest describes.
func TestCastChecksTheManifest(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(ctx context.Context, local *store.Local, chunk func(n int) string) error
	}{{
		name: "a byte changed",
		change: func(ctx context.Context, local *store.Local, chunk func(int) string) error {
			data, err := local.Get(ctx, chunk(2))
			if err != nil {
				return err
			}
			data[len(data)-1] ^= 1
			return local.Put(ctx, chunk(2), data)
		},
	}, {
		name: "the last chunk removed",
		change: func(ctx context.Context, local *store.Local, chunk func(int) string) error {
			return local.Delete(ctx, chunk(2))
		},
	}, {
		name: "a chunk added",
		change: func(ctx context.Context, local *store.Local, chunk func(int) string) error {
			return local.Put(ctx, chunk(3), []byte(captureMagic))
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			s := openExecStream(t, local)
			s.ToClient([]byte(wsResponse))
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "one")))
			s.writeChunk(false)
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "two")))
			s.Close()
			s.Wait()
			reader := Reader{Store: local}
			written, err := readCast(ctx, reader, s.ID())
			if err != nil {
				t.Fatalf("as written: %v", err)
			}
			cast, err := reader.OpenCast(ctx, "sre", "fix", s.ID())
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.change(ctx, local, func(n int) string { return chunkKey(s.prefix, n) }); err != nil {
				t.Fatal(err)
			}
			// Changed between the check and the write: what was checked,
			// or an error.
			var out bytes.Buffer
			if err := cast.Write(ctx, &out); err == nil && !bytes.Equal(out.Bytes(), written) {
				t.Errorf("changed after the check, written without an error:\n%s", out.Bytes())
			}
			if _, err := reader.OpenCast(ctx, "sre", "fix", s.ID()); !errors.Is(err, ErrNotAsWritten) {
				t.Errorf("changed, opened: %v, want %v", err, ErrNotAsWritten)
			}
		})
	}
}

// failingStore fails every write.
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error { return errors.New("disk full") }

func TestPolicyWhenTheStoreFails(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
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

// failingKeyStore fails the writes of one key.
type failingKeyStore struct {
	store.Store
	key string
}

func (s failingKeyStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, s.key) {
		return errors.New("disk full")
	}
	return s.Store.Put(ctx, key, data)
}

// TestManifestAfterAFailedChunk: a best-effort recording whose second
// chunk could not be written is finished with a manifest that describes
// the chunk written, and reads back.
func TestManifestAfterAFailedChunk(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	s := openExecStream(t, failingKeyStore{Store: local, key: chunkPrefix + "000002"})
	s.ToClient([]byte(wsResponse))
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "written")))
	s.writeChunk(false)
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "lost")))
	s.Close()
	s.Wait()
	reader := Reader{Store: local}
	streams, err := reader.Streams(ctx, "sre", "fix")
	if err != nil || len(streams) != 1 || streams[0].Manifest == nil {
		t.Fatalf("streams: %+v, %v", streams, err)
	}
	if m := streams[0].Manifest; m.Chunks != 1 || m.CaptureLength != streams[0].Bytes || !strings.Contains(m.Failed, "disk full") {
		t.Errorf("manifest %+v, %d bytes stored", m, streams[0].Bytes)
	}
	cast, err := readCast(ctx, reader, s.ID())
	if err != nil || !strings.Contains(string(cast), "written") || strings.Contains(string(cast), "lost") {
		t.Errorf("cast %q, %v", cast, err)
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
	local := newLocalStore(t)
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

// countingStore counts the bytes written.
type countingStore struct {
	store.Store
	stored atomic.Int64
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
