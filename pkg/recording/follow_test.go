// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// followed is what a follower wrote, read while it writes.
type followed struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *followed) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(b)
}

func (f *followed) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// waitFor waits until what was followed holds want.
func (f *followed) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(f.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the follower never got %q; it got:\n%s", want, f.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// tamperStore changes each manifest as it is written.
type tamperStore struct {
	store.Store
	manifest func(*v1alpha1.RecordingManifest)
}

func (s tamperStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, "/"+manifestObject) && s.manifest != nil {
		var m v1alpha1.RecordingManifest
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		s.manifest(&m)
		data, _ = json.Marshal(m)
	}
	return s.Store.Put(ctx, key, data)
}

// TestFollow: a follower of a live stream gets each chunk as it is stored
// and ends with the stream: verified when its signed manifest describes
// every chunk followed, with an error that says why when it does not.
func TestFollow(t *testing.T) {
	for _, tt := range []struct {
		name     string
		manifest func(*v1alpha1.RecordingManifest)
		// wantEnd is the marker the follow ends with; wantErr that it ends
		// with ErrNotAsWritten.
		wantEnd string
		wantErr bool
	}{
		{name: "verified", wantEnd: "recording ended and verified"},
		{name: "incomplete", manifest: func(m *v1alpha1.RecordingManifest) {
			m.Failed = "the store failed"
			m.Key, m.MAC = testKeys.sign(manifestSignedBytes(m, manifestDir(m)))
		}, wantEnd: "recording ended incomplete: the store failed"},
		{name: "unsigned", manifest: func(m *v1alpha1.RecordingManifest) { m.Key, m.MAC = "", "" }, wantEnd: "it is not signed", wantErr: true},
		{name: "signature does not match", manifest: func(m *v1alpha1.RecordingManifest) { m.CaptureLength++ }, wantEnd: "its signature does not match", wantErr: true},
		{name: "signed with another key", manifest: func(m *v1alpha1.RecordingManifest) {
			m.Key, m.MAC = mustParseKeys("k9 " + strings.Repeat("AAAA", 11)).sign(manifestSignedBytes(m, manifestDir(m)))
		}, wantEnd: "a key this server does not hold", wantErr: true},
		{name: "describes other chunks", manifest: func(m *v1alpha1.RecordingManifest) {
			m.Chunks--
			m.Key, m.MAC = testKeys.sign(manifestSignedBytes(m, manifestDir(m)))
		}, wantEnd: "its manifest says", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			s := openExecStream(t, tamperStore{Store: local, manifest: tt.manifest})
			s.ToClient([]byte(wsResponse))
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "one")))
			s.writeChunk(false)
			waitLive(t, local, s)
			reader := testReader(local)
			reader.FollowPoll = time.Millisecond
			cast, err := reader.OpenCast(ctx, "sre", "fix", s.ID(), false)
			if err != nil || cast.Verification() != v1alpha1.RecordingLive {
				t.Fatalf("opened %v, %v; want a live recording", cast, err)
			}
			out := &followed{}
			flushes := 0
			done := make(chan error, 1)
			go func() { done <- reader.Follow(ctx, cast, out, func() { flushes++ }) }()
			out.waitFor(t, `"o", "one"`)
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "two")))
			s.writeChunk(false)
			out.waitFor(t, `"o", "two"`)
			s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "three")))
			s.Close()
			s.Wait()
			err = <-done
			if tt.wantErr != errors.Is(err, ErrNotAsWritten) || !tt.wantErr && err != nil {
				t.Errorf("the follow ended with %v, want ErrNotAsWritten: %v", err, tt.wantErr)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(out.String(), `"o", "three"`) || !strings.Contains(last, `"m", "`) || !strings.Contains(last, tt.wantEnd) {
				t.Errorf("the follow ended with %s, want a marker with %q; it got:\n%s", last, tt.wantEnd, out.String())
			}
			if !strings.Contains(lines[0], `"clustergateVerification":"live"`) || flushes < 3 {
				t.Errorf("header %s, %d flushes", lines[0], flushes)
			}
		})
	}
}

// waitLive waits for the first live mark of s, which its goroutine writes
// as it starts.
func waitLive(t *testing.T, st store.Store, s *Stream) {
	t.Helper()
	for {
		if _, err := st.Get(context.Background(), s.prefix+liveObject); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// dir is where the test session's stream of m is stored.
func manifestDir(m *v1alpha1.RecordingManifest) string { return streamPrefix(testSession, m.Stream) }

// TestFollowEnds: a follow of a finished stream writes it and ends; one
// whose client went away ends at once.
func TestFollowEnds(t *testing.T) {
	local := newLocalStore(t)
	finished := recordTwoChunks(t, local)
	live := openExecStream(t, local)
	defer func() {
		live.Close()
		live.Wait()
	}()
	waitLive(t, local, live)
	reader := testReader(local)
	for _, tt := range []struct {
		name    string
		stream  string
		cancel  bool
		wantErr error
	}{
		{name: "finished", stream: finished.ID()},
		{name: "live, the client gone", stream: live.ID(), cancel: true, wantErr: context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cast, err := reader.OpenCast(ctx, "sre", "fix", tt.stream, false)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cancel {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			var out bytes.Buffer
			if err := reader.Follow(ctx, cast, &out, func() {}); !errors.Is(err, tt.wantErr) {
				t.Errorf("ended with %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestFollowRequests: a follower of the request log gets what was logged,
// then each entry as its chunk is written, once.
func TestFollowRequests(t *testing.T) {
	local := newLocalStore(t)
	r := newTestRecorder(t, local, ModeBestEffort)
	r.LogRequest(testSession, v1alpha1.RequestLogEntry{Time: testStart, Method: "GET", Path: "/before"})
	r.flushRequests(context.Background())
	reader := testReader(local)
	reader.FollowPoll = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var paths []string
	seen := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(paths) >= n
	}
	done := make(chan error, 1)
	go func() {
		done <- reader.FollowRequests(ctx, "sre", "fix", func(req *v1alpha1.RequestLogEntry) error {
			mu.Lock()
			defer mu.Unlock()
			paths = append(paths, req.Path)
			return nil
		}, func() {})
	}()
	for !seen(1) {
		time.Sleep(time.Millisecond)
	}
	r.LogRequest(testSession, v1alpha1.RequestLogEntry{Time: testStart.Add(time.Second), Method: "GET", Path: "/after"})
	r.flushRequests(context.Background())
	for !seen(2) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("ended with %v", err)
	}
	if strings.Join(paths, " ") != "/before /after" {
		t.Errorf("followed %v", paths)
	}
}

// TestOutOfReach: with the local store, a stream another replica records
// is out of this replica's reach, and says so; with a shared store never.
func TestOutOfReach(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reader  Reader
		stream  string
		wantMsg string
	}{
		{name: "another replica, local store", reader: Reader{OwnOnly: true, Replica: "clustergate-1"},
			stream: "20261203T090000Z-clustergate-0-0a1b2c3d", wantMsg: "recorded by replica clustergate-0"},
		{name: "this replica", reader: Reader{OwnOnly: true, Replica: "clustergate-0"}, stream: "20261203T090000Z-clustergate-0-0a1b2c3d"},
		{name: "shared store", reader: Reader{Replica: "clustergate-1"}, stream: "20261203T090000Z-clustergate-0-0a1b2c3d"},
		{name: "no replica in the ID", reader: Reader{OwnOnly: true, Replica: "r"}, stream: "20261203T090000Z-0a1b2c3d"},
		{name: "not an ID", reader: Reader{OwnOnly: true, Replica: "r"}, stream: "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.reader.OutOfReach(tt.stream)
			if tt.wantMsg == "" && got != "" || !strings.Contains(got, tt.wantMsg) || tt.wantMsg != "" && !strings.Contains(got, "S3") {
				t.Errorf("said %q, want %q", got, tt.wantMsg)
			}
		})
	}
}
