// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

var testSession = v1alpha1.RecordedSession{Namespace: "sre", Name: "fix", UID: "uid-1", Owner: "alice", Target: "shoot/local", Reason: "INC-1"}

// testStart is when the test recorders' clocks start.
var testStart = time.Unix(1700000000, 0)

// testKeys are the manifest keys of the test recorders and readers.
var testKeys = mustParseKeys("k1 " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)))

func mustParseKeys(lines string) *ManifestKeys {
	k, err := ParseManifestKeys([]byte(lines))
	if err != nil {
		panic(err)
	}
	return k
}

func newTestRecorder(t *testing.T, s store.Store, policy Mode) *Recorder {
	t.Helper()
	return New(Config{Store: s, Mode: policy, Replica: "r1", FlushInterval: time.Hour, Keys: testKeys, Clock: clocktesting.NewFakeClock(testStart)})
}

// testReader reads s with the test keys, at the test recorders' start.
func testReader(s store.Store) Reader {
	return Reader{Store: s, Keys: testKeys, Clock: clocktesting.NewFakeClock(testStart)}
}

// newLocalStore is a local store in the test's directory.
func newLocalStore(t testing.TB) *store.Local {
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
	s, err := newTestRecorder(t, st, ModeBestEffort).OpenStream(context.Background(), v1alpha1.RecordingInfo{RecordedSession: testSession, Subresource: "exec"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordAndReadBack(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	r := newTestRecorder(t, local, ModeBestEffort)
	s, err := r.OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: testSession, Subresource: "exec", Pod: "p", Command: []string{"sh"}, TTY: true})
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
	r.LogRequest(testSession, v1alpha1.RequestLogEntry{Method: "GET", Path: "/api/v1/pods", Query: "watch=1&access_token=secret", Status: 200})
	r.LogRequest(testSession, v1alpha1.RequestLogEntry{Method: "POST", Path: "/api/v1/namespaces/x/pods/p/exec", Stream: s.ID(), Status: 101})
	r.flushRequests(ctx)

	reader := testReader(local)
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
		Clustergate            v1alpha1.RecordingInfo
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
	cast, err := reader.OpenCast(ctx, testSession.Namespace, testSession.Name, stream, false)
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

// TestCastChecksTheManifest: a finished recording is read only when a
// manifest signed with the server's key describes its chunks and info;
// otherwise only when the reader asks for it unverified, and then marked.
func TestCastChecksTheManifest(t *testing.T) {
	changeChunk := func(ctx context.Context, local *store.Local, prefix string) error {
		data, err := local.Get(ctx, chunkKey(prefix, 2))
		if err != nil {
			return err
		}
		data[len(data)-1] ^= 1
		return local.Put(ctx, chunkKey(prefix, 2), data)
	}
	// forge changes a chunk and writes the manifest that describes the
	// chunks now, as a store writer can.
	forge := func(sign func(m *v1alpha1.RecordingManifest, prefix string)) func(ctx context.Context, local *store.Local, prefix string) error {
		return func(ctx context.Context, local *store.Local, prefix string) error {
			if err := changeChunk(ctx, local, prefix); err != nil {
				return err
			}
			var m v1alpha1.RecordingManifest
			if err := testReader(local).readJSON(ctx, prefix+manifestObject, &m); err != nil {
				return err
			}
			sum := sha256.New()
			m.CaptureLength = 0
			for n := 1; n <= m.Chunks; n++ {
				data, err := local.Get(ctx, chunkKey(prefix, n))
				if err != nil {
					return err
				}
				sum.Write(data)
				m.CaptureLength += int64(len(data))
			}
			m.CaptureSHA256 = hex.EncodeToString(sum.Sum(nil))
			sign(&m, prefix)
			data, _ := json.Marshal(m)
			return local.Put(ctx, prefix+manifestObject, data)
		}
	}
	for _, tt := range []struct {
		name   string
		change func(ctx context.Context, local *store.Local, prefix string) error
	}{{
		name:   "a byte changed",
		change: changeChunk,
	}, {
		name: "the last chunk removed",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			return local.Delete(ctx, chunkKey(prefix, 2))
		},
	}, {
		name: "a chunk added",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			return local.Put(ctx, chunkKey(prefix, 3), []byte(captureMagic))
		},
	}, {
		name:   "a byte changed, the manifest's SHA-256 recomputed",
		change: forge(func(*v1alpha1.RecordingManifest, string) {}),
	}, {
		name:   "a byte changed, the manifest recomputed without a signature",
		change: forge(func(m *v1alpha1.RecordingManifest, _ string) { m.Key, m.MAC = "", "" }),
	}, {
		name: "a byte changed, the manifest signed with a key the server does not hold",
		change: forge(func(m *v1alpha1.RecordingManifest, prefix string) {
			other := mustParseKeys("k1 " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)))
			m.Key, m.MAC = other.sign(manifestSignedBytes(m, prefix))
		}),
	}, {
		name: "the manifest removed",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			return local.Delete(ctx, prefix+manifestObject)
		},
	}, {
		name: "the manifest and the live mark removed",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			if err := local.Delete(ctx, prefix+liveObject); err != nil {
				return err
			}
			return local.Delete(ctx, prefix+manifestObject)
		},
	}, {
		name: "the info changed",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			var info v1alpha1.RecordingInfo
			if err := testReader(local).readJSON(ctx, prefix+infoObject, &info); err != nil {
				return err
			}
			info.Owner = "mallory"
			data, _ := json.Marshal(info)
			return local.Put(ctx, prefix+infoObject, data)
		},
	}, {
		name: "the manifest of another stream with the same chunks",
		change: func(ctx context.Context, local *store.Local, prefix string) error {
			other := recordTwoChunks(t, local)
			data, err := local.Get(ctx, other.prefix+manifestObject)
			if err != nil {
				return err
			}
			var m v1alpha1.RecordingManifest
			if err := json.Unmarshal(data, &m); err != nil {
				return err
			}
			var info v1alpha1.RecordingInfo
			if err := testReader(local).readJSON(ctx, prefix+infoObject, &info); err != nil {
				return err
			}
			m.Stream = info.Stream
			data, _ = json.Marshal(m)
			return local.Put(ctx, prefix+manifestObject, data)
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			s := recordTwoChunks(t, local)
			reader := testReader(local)
			written, err := readCast(ctx, reader, s.ID())
			if err != nil {
				t.Fatalf("as written: %v", err)
			}
			cast, err := reader.OpenCast(ctx, "sre", "fix", s.ID(), false)
			if err != nil || cast.Verification() != v1alpha1.RecordingVerified {
				t.Fatalf("as written: %v, %q", err, cast.Verification())
			}
			if err := tt.change(ctx, local, s.prefix); err != nil {
				t.Fatal(err)
			}
			// Changed between the check and the write: what was checked,
			// or an error.
			var out bytes.Buffer
			if err := cast.Write(ctx, &out); err == nil && !bytes.Equal(out.Bytes(), written) {
				t.Errorf("changed after the check, written without an error:\n%s", out.Bytes())
			}
			// Read once the writer would have said it is live again.
			later := Reader{Store: local, Keys: testKeys, Clock: clocktesting.NewFakeClock(testStart.Add(liveGrace + time.Second))}
			if _, err := later.OpenCast(ctx, "sre", "fix", s.ID(), false); !errors.Is(err, ErrNotAsWritten) {
				t.Errorf("changed, opened: %v, want %v", err, ErrNotAsWritten)
			}
			unverified, err := later.OpenCast(ctx, "sre", "fix", s.ID(), true)
			if err != nil || !strings.HasPrefix(unverified.Verification(), v1alpha1.RecordingUnverifiedPrefix) {
				t.Fatalf("changed, opened unverified: %v, %v", unverified, err)
			}
			out.Reset()
			if err := unverified.Write(ctx, &out); err != nil {
				t.Fatal(err)
			}
			var header struct{ ClustergateVerification string }
			if err := json.Unmarshal(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0], &header); err != nil ||
				header.ClustergateVerification != unverified.Verification() {
				t.Errorf("the unverified cast's header says %q, want %q (%v)", header.ClustergateVerification, unverified.Verification(), err)
			}
		})
	}
}

// recordTwoChunks records an exec stream of the test session in two
// chunks, and finishes it.
func recordTwoChunks(t *testing.T, st store.Store) *Stream {
	t.Helper()
	s := openExecStream(t, st)
	s.ToClient([]byte(wsResponse))
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "one")))
	s.writeChunk(false)
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "two")))
	s.Close()
	s.Wait()
	return s
}

// TestLiveRecording: a recording without a manifest is read while its
// writer says that it is live, and refused once it stopped saying so.
func TestLiveRecording(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	s := openExecStream(t, local)
	defer func() {
		s.Close()
		s.Wait()
	}()
	s.ToClient([]byte(wsResponse))
	s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "one")))
	s.writeChunk(false)
	// The recording's goroutine writes the first live mark as it starts.
	for {
		if _, err := local.Get(ctx, s.prefix+liveObject); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, tt := range []struct {
		name      string
		readerAge time.Duration
		want      string
	}{
		{name: "live", readerAge: liveInterval, want: v1alpha1.RecordingLive},
		{name: "its writer stopped", readerAge: liveGrace + time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader := Reader{Store: local, Keys: testKeys, Clock: clocktesting.NewFakeClock(testStart.Add(tt.readerAge))}
			cast, err := reader.OpenCast(ctx, "sre", "fix", s.ID(), false)
			switch {
			case tt.want == "" && !errors.Is(err, ErrNotAsWritten):
				t.Errorf("opened: %v, want %v", err, ErrNotAsWritten)
			case tt.want != "" && (err != nil || cast.Verification() != tt.want):
				t.Errorf("opened: %v, %v, want %q", cast, err, tt.want)
			}
		})
	}
}

// TestManifestKeyRotation: the first key signs and every key verifies, so
// that a new key put first signs while recordings the old one signed
// stay verified until it is removed.
func TestManifestKeyRotation(t *testing.T) {
	ctx := context.Background()
	key := func(id string, b byte) string {
		return id + " " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) + "\n"
	}
	oldKeys, rotated, newKeys := mustParseKeys(key("old", 1)), mustParseKeys(key("new", 2)+key("old", 1)), mustParseKeys(key("new", 2))
	local := newLocalStore(t)
	record := func(keys *ManifestKeys) string {
		r := New(Config{Store: local, Mode: ModeBestEffort, Replica: "r1", FlushInterval: time.Hour, Keys: keys, Clock: clocktesting.NewFakeClock(testStart)})
		s, err := r.OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: testSession, Subresource: "exec"})
		if err != nil {
			t.Fatal(err)
		}
		s.ToClient([]byte(wsResponse))
		s.Close()
		s.Wait()
		return s.ID()
	}
	byOld, byRotated := record(oldKeys), record(rotated)
	for _, tt := range []struct {
		name   string
		keys   *ManifestKeys
		stream string
		want   error
	}{
		{name: "old, read with the old key", keys: oldKeys, stream: byOld},
		{name: "old, read after the new key was added", keys: rotated, stream: byOld},
		{name: "signed after the rotation, read with both", keys: rotated, stream: byRotated},
		{name: "signed after the rotation, read with the new key", keys: newKeys, stream: byRotated},
		{name: "signed after the rotation, read with the old key only", keys: oldKeys, stream: byRotated, want: ErrNotAsWritten},
		{name: "old, read once the old key was removed", keys: newKeys, stream: byOld, want: ErrNotAsWritten},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Reader{Store: local, Keys: tt.keys}.OpenCast(ctx, "sre", "fix", tt.stream, false)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("opened: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestParseManifestKeys: key files are read line by line, and an error
// names the line, never the key.
func TestParseManifestKeys(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	for _, tt := range []struct {
		name, data string
		want       []string
		wantErr    string
	}{
		{name: "one key", data: "a " + good + "\n", want: []string{"a"}},
		{name: "two keys, comments and blank lines", data: "# new first\nb " + good + "\n\n  a\t" + good, want: []string{"b", "a"}},
		{name: "none", data: "# nothing\n", wantErr: "no key"},
		{name: "too short", data: "a " + short, wantErr: "line 1 (key \"a\"): the key must be the base64 of at least 32 bytes"},
		{name: "not base64", data: "a " + good + "!", wantErr: "the key must be the base64"},
		{name: "no id", data: good, wantErr: "line 1: want an id"},
		{name: "an id twice", data: "a " + good + "\na " + good, wantErr: "line 2: key \"a\" is given twice"},
		{name: "an id with a slash", data: "a/b " + good, wantErr: "want an id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseManifestKeys([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), good[:16]) || strings.Contains(err.Error(), short[:16]) {
					t.Errorf("error %v, want one saying %q without the key", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, key := range k.keys {
				ids = append(ids, key.id)
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

// failingStore fails every write.
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error { return errors.New("disk full") }

func TestModeWhenTheStoreFails(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	if _, err := newTestRecorder(t, failingStore{local}, ModeRequired).OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: testSession}); err == nil {
		t.Error("required: a stream opened although the store cannot be written")
	}
	s, err := newTestRecorder(t, failingStore{local}, ModeBestEffort).OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: testSession})
	if err != nil || s.Recording() {
		t.Errorf("best-effort: %v, recording %v", err, s != nil && s.Recording())
	}
	if New(Config{Store: local, Mode: ModeOff}) != nil {
		t.Error("off: a recorder")
	}

	// Required and failing mid-way: the relay is told.
	switching := &switchStore{Store: local}
	r := newTestRecorder(t, switching, ModeRequired)
	s, err = r.OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: testSession})
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
	reader := testReader(local)
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

// TestSweep: recordings and request logs past retention are deleted, and
// nothing else under the store's root is, whatever its age: a recording
// directory that holds other data, or a bucket without a prefix, keeps it.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	const stream = "sre/old/u1/streams/20231114T221320Z-r1-2c9b3c4f/"
	own := []string{
		"sre/old/u1/requests/r1-1700000000000000000-00000001.jsonl",
		"sre/old/u1/requests/-1700000000000000000-00000002.jsonl",
		stream + "info.json", stream + "capture-000001", stream + "live.json", stream + "manifest.json",
		"sre/old/5f0c1a52-7c1e-4a2e-9d43-0e1d7a0b6c11/streams/20231114T221320Z-6fa87a0a/info.json",
	}
	foreign := []string{
		// --recording-dir=--data-dir: the embedded etcd and the serving
		// certificates.
		"etcd/member/snap/db", "etcd/member/wal/0000000000000000-0000000000000000.wal", "certificates/apiserver.crt",
		// A bucket without a prefix, shared with backups.
		"backups/etcd/2026/12/snapshot.db",
		"notes.txt",
		// Beside a session's recordings, but not what the recorder writes.
		"sre/old/u1/notes.txt", "sre/old/u1/requests/notes.txt", "sre/old/u1/streams/s/info.json", stream + "notes.txt",
		stream + "capture-1", "Sre/old/u1/requests/r1-1-00000001.jsonl",
	}
	for _, key := range append(own, foreign...) {
		if err := local.Put(ctx, key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	r := New(Config{Store: local, Mode: ModeBestEffort, Retention: 24 * time.Hour, Clock: clocktesting.NewFakeClock(time.Now().Add(48 * time.Hour))})
	r.sweep(ctx)
	objects, err := local.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range objects {
		left = append(left, o.Key)
	}
	slices.Sort(foreign)
	if diff := cmp.Diff(foreign, left); diff != "" {
		t.Errorf("left after the sweep (-want +got):\n%s", diff)
	}
}

// BenchmarkLogRequest measures what the request log adds to each proxied
// request: one line, as a GET of one object makes it.
func BenchmarkLogRequest(b *testing.B) {
	local, err := store.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := New(Config{Store: local, Mode: ModeBestEffort, Replica: "r1", FlushInterval: time.Hour})
	req := v1alpha1.RequestLogEntry{Time: time.Now(), Way: "aggregated", Method: "GET", Path: "/api/v1/namespaces/default/pods/p",
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
			r := New(Config{Store: counted, Mode: ModeBestEffort})
			s, err := r.OpenStream(context.Background(), v1alpha1.RecordingInfo{RecordedSession: testSession, Subresource: "exec", Pod: "p"})
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
