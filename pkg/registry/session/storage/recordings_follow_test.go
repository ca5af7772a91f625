// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// followKeys sign the recordings of the follow tests.
var followKeys = func() *recording.ManifestKeys {
	k, err := recording.ParseManifestKeys([]byte("k1 " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))))
	if err != nil {
		panic(err)
	}
	return k
}()

// recordingsServer serves sessions/fix/recordings/<path> in sre with rest.
func recordingsServer(t *testing.T, rest *RecordingsREST) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := genericapirequest.WithNamespace(req.Context(), "sre")
		responder := &statusResponder{w: w}
		h, err := rest.Connect(ctx, "fix", &clustergate.SessionProxyOptions{Path: req.URL.Path}, responder)
		if err != nil {
			responder.Error(err)
			return
		}
		h.ServeHTTP(w, req.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// stdout is a WebSocket frame of v5.channel.k8s.io with text on stdout.
func stdout(text string) []byte {
	return append([]byte{0x82, byte(len(text) + 1), 1}, text...)
}

const wsAnswer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"

// manifestTamperer makes each manifest written unsigned.
type manifestTamperer struct{ store.Store }

func (s manifestTamperer) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, "/manifest.json") {
		data = bytes.Replace(data, []byte(`"key":"k1"`), []byte(`"key":""`), 1)
	}
	return s.Store.Put(ctx, key, data)
}

// lineReader reads the lines of a followed answer as they come.
type lineReader struct {
	lines chan string
	err   chan error
}

func readLines(body io.Reader) *lineReader {
	l := &lineReader{lines: make(chan string, 100), err: make(chan error, 1)}
	go func() {
		scanner := bufio.NewScanner(body)
		for scanner.Scan() {
			l.lines <- scanner.Text()
		}
		close(l.lines)
		l.err <- scanner.Err()
	}()
	return l
}

// waitFor returns the first line with want.
func (l *lineReader) waitFor(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("the answer ended before a line with %q", want)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			t.Fatalf("no line with %q", want)
		}
	}
}

// followGoroutines counts the goroutines that follow a recording.
func followGoroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "recording.Reader.Follow")
}

// TestFollowRecordedStream: ?follow=true sends a live stream's chunks as
// they are stored and ends with the stream, its manifest checked; an
// unsigned manifest aborts the answer after saying why; a client that goes
// away leaves no follower behind.
func TestFollowRecordedStream(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tamper    bool
		leave     bool
		wantEnd   string
		wantError bool
	}{
		{name: "ends verified", wantEnd: "recording ended and verified"},
		{name: "unsigned manifest", tamper: true, wantEnd: "it is not signed", wantError: true},
		{name: "the client goes away", leave: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			local, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var written store.Store = local
			if tt.tamper {
				written = manifestTamperer{local}
			}
			rec := recording.New(recording.Config{Store: written, Mode: recording.ModeBestEffort, Replica: "a",
				FlushInterval: 10 * time.Millisecond, Keys: followKeys})
			s, err := rec.OpenStream(context.Background(), v1alpha1.RecordingInfo{RecordedSession: recordedSession, Subresource: "exec"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				s.Close()
				s.Wait()
			}()
			s.ToClient([]byte(wsAnswer))
			s.ToClient(stdout("one"))
			reader := &recording.Reader{Store: local, Keys: followKeys, FollowPoll: 5 * time.Millisecond}
			for {
				// The live mark is written as the recording starts.
				if c, err := reader.OpenCast(context.Background(), "sre", "fix", s.ID(), false); err == nil && c.Verification() == v1alpha1.RecordingLive {
					break
				}
				time.Sleep(time.Millisecond)
			}
			srv := recordingsServer(t, &RecordingsREST{reader: reader})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/streams/"+s.ID()+"?follow=true", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != CastContentType {
				t.Fatalf("answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			lines := readLines(resp.Body)
			lines.waitFor(t, `"o", "one"`)
			s.ToClient(stdout("two"))
			lines.waitFor(t, `"o", "two"`)
			if tt.leave {
				cancel()
				for deadline := time.Now().Add(5 * time.Second); followGoroutines() > 0; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the follower still runs after its client went away")
					}
				}
				return
			}
			s.ToClient(stdout("three"))
			s.Close()
			s.Wait()
			lines.waitFor(t, `"o", "three"`)
			end := lines.waitFor(t, `"m", `)
			if !strings.Contains(end, tt.wantEnd) {
				t.Errorf("ended with %s, want %q", end, tt.wantEnd)
			}
			for range lines.lines {
			}
			if err := <-lines.err; (err != nil) != tt.wantError {
				t.Errorf("the answer ended with %v, want an error: %v", err, tt.wantError)
			}
		})
	}
}

// TestFollowOutOfReach: with the local store, a stream another replica
// records is refused with a Status that says to use the S3 store.
func TestFollowOutOfReach(t *testing.T) {
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		reader   *recording.Reader
		wantCode int
		wantBody string
	}{
		{name: "local store", reader: &recording.Reader{Store: local, OwnOnly: true, Replica: "b"},
			wantCode: http.StatusServiceUnavailable, wantBody: "needs the S3 store"},
		{name: "shared store", reader: &recording.Reader{Store: local, Replica: "b"}, wantCode: http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := recordingsServer(t, &RecordingsREST{reader: tt.reader})
			resp, err := http.Get(srv.URL + "/streams/20261203T090000Z-a-0a1b2c3d?follow=true")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("answered %d %s, want %d with %q", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

// TestFollowRequestLog: ?follow=true sends the request log as JSON lines,
// then each entry as it is stored, until the client goes away.
func TestFollowRequestLog(t *testing.T) {
	dir := t.TempDir()
	logRequests(t, dir, 3, 3, 1)
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := recordingsServer(t, &RecordingsREST{reader: &recording.Reader{Store: local, FollowPoll: 5 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/requests?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != RequestLogFollowContentType {
		t.Fatalf("answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := readLines(resp.Body)
	for i := range 3 {
		var entry v1alpha1.RequestLogEntry
		if line := lines.waitFor(t, "{"); json.Unmarshal([]byte(line), &entry) != nil || entry.Path != "/api/v1/namespaces/n"+string(rune('0'+i)) {
			t.Errorf("entry %d: %s", i, line)
		}
	}
	rec := recording.New(recording.Config{Store: local, Mode: recording.ModeBestEffort, Replica: "r2", FlushInterval: 10 * time.Millisecond})
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go rec.Run(runCtx)
	rec.LogRequest(recordedSession, v1alpha1.RequestLogEntry{Time: time.Now(), Method: "DELETE", Path: "/later", Status: 200})
	lines.waitFor(t, `"path":"/later"`)
	cancel()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		buf := make([]byte, 1<<20)
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "recording.Reader.FollowRequests") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower still runs after its client went away")
		}
	}
}
