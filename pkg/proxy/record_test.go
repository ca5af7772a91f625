// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// execPath is an exec on the target that gets recorded.
const execPath = "/api/v1/namespaces/default/pods/p/exec?command=cat&stdin=true&stdout=true"

// echoExecBackend answers exec over WebSocket v5 and echoes every message.
func echoExecBackend(t *testing.T) Target {
	t.Helper()
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_, _ = io.WriteString(w, `{"kind":"Namespace"}`)
			return
		}
		conn, err := (&websocket.Upgrader{Subprotocols: []string{"v5.channel.k8s.io"}}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			kind, msg, err := conn.ReadMessage()
			if err != nil || conn.WriteMessage(kind, msg) != nil {
				return
			}
		}
	})
	return target(u, tr)
}

// echoSPDYExecBackend answers exec over SPDY (v4.channel.k8s.io), as a
// kubelet does, and echoes standard input to standard output.
func echoSPDYExecBackend(t *testing.T) Target {
	t.Helper()
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
			return
		}
		streams := make(chan httpstream.Stream, 8)
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			streams <- s
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		var stdin, stdout httpstream.Stream
		for stdin == nil || stdout == nil {
			select {
			case s := <-streams:
				switch s.Headers().Get("streamType") {
				case "stdin":
					stdin = s
				case "stdout":
					stdout = s
				}
			case <-conn.CloseChan():
				return
			}
		}
		_, _ = io.Copy(stdout, stdin)
	})
	return target(u, tr)
}

// lockedBuffer is a buffer one goroutine writes and another reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recordingProxy serves a tracker that records with rec, with refusals
// written as Status.
func recordingProxy(t testing.TB, rec *recording.Recorder, tgt Target) string {
	t.Helper()
	r := NewTracker(clock.RealClock{}, Limits{})
	r.RecordWith(rec)
	return serveProxy(t, r, tgt)
}

// serveProxy serves r's requests to tgt below /proxy, with refusals
// written as Status, at the ws:// URL it returns.
func serveProxy(t testing.TB, r *Tracker, tgt Target) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{w: w}).ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "http://", "ws://", 1)
}

// failingStore fails every write while fail is set.
type failingStore struct {
	store.Store
	fail atomic.Bool
}

func (s *failingStore) Put(ctx context.Context, key string, data []byte) error {
	if s.fail.Load() {
		return errors.New("the disk is full")
	}
	return s.Store.Put(ctx, key, data)
}

func newFailingStore(t *testing.T, failing bool) *failingStore {
	t.Helper()
	local, err := store.NewLocal(t.TempDir())
	must(t, err)
	s := &failingStore{Store: local}
	s.fail.Store(failing)
	return s
}

func dialExec(base string) (*websocket.Conn, *http.Response, error) {
	dialer := websocket.Dialer{Subprotocols: []string{"v5.channel.k8s.io"}}
	return dialer.Dial(base+"/proxy"+execPath, nil)
}

// TestRecordingRequired: with --recording=required an exec is refused
// while the store cannot be written, and closed with a close frame saying
// why when its recording fails while it runs.
func TestRecordingRequired(t *testing.T) {
	tgt := echoExecBackend(t)
	t.Run("refused when the recording cannot start", func(t *testing.T) {
		s := newFailingStore(t, true)
		base := recordingProxy(t, recording.New(recording.Config{Store: s, Mode: recording.ModeRequired}), tgt)
		_, resp, err := dialExec(base)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("dial: %v, response %+v; want 503", err, resp)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "--recording=required") || !strings.Contains(string(body), "the disk is full") {
			t.Errorf("the refusal says %s", body)
		}
	})
	t.Run("closed when the recording fails", func(t *testing.T) {
		s := newFailingStore(t, false)
		base := recordingProxy(t, recording.New(recording.Config{Store: s, Mode: recording.ModeRequired, FlushInterval: 20 * time.Millisecond}), tgt)
		conn, _, err := dialExec(base)
		must(t, err)
		defer conn.Close()
		must(t, conn.WriteMessage(websocket.BinaryMessage, []byte("\x00echo")))
		if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "\x00echo" {
			t.Fatalf("echo: %q %v", msg, err)
		}
		s.fail.Store(true)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			// Keep the recording busy until its next chunk fails.
			_ = conn.WriteMessage(websocket.BinaryMessage, []byte("\x00more"))
			if _, _, err = conn.ReadMessage(); err != nil {
				break
			}
		}
		var closed *websocket.CloseError
		if !errors.As(err, &closed) || closed.Code != closePolicyViolation || !strings.Contains(closed.Text, "recording required") {
			t.Errorf("the stream ended with %v, want a close frame saying the recording failed", err)
		}
	})
	t.Run("SPDY: closed with a Status when the recording fails", func(t *testing.T) {
		s := newFailingStore(t, false)
		base := recordingProxy(t, recording.New(recording.Config{Store: s, Mode: recording.ModeRequired, FlushInterval: 20 * time.Millisecond}), echoSPDYExecBackend(t))
		u, err := url.Parse(strings.Replace(base, "ws://", "http://", 1) + "/proxy" + execPath)
		must(t, err)
		executor, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: u.Host}, http.MethodPost, u)
		must(t, err)
		stdin, typing := io.Pipe()
		defer typing.Close()
		stdout := &lockedBuffer{}
		ended := make(chan error, 1)
		go func() {
			ended <- executor.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout})
		}()
		_, _ = io.WriteString(typing, "echo\n")
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(stdout.String(), "echo\n") {
			if time.Now().After(deadline) {
				t.Fatalf("the echo did not come back: %q", stdout.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.fail.Store(true)
		// Keep the recording busy until its next chunk fails.
		go func() {
			for {
				if _, err := io.WriteString(typing, "more\n"); err != nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		select {
		case err = <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the stream was not closed")
		}
		if err == nil || !strings.Contains(err.Error(), "recording required") || !strings.Contains(err.Error(), "the disk is full") {
			t.Errorf("the stream ended with %v, want the Status saying the recording failed", err)
		}
	})
	t.Run("best-effort lets it run", func(t *testing.T) {
		s := newFailingStore(t, true)
		base := recordingProxy(t, recording.New(recording.Config{Store: s, Mode: recording.ModeBestEffort}), tgt)
		conn, _, err := dialExec(base)
		must(t, err)
		defer conn.Close()
		must(t, conn.WriteMessage(websocket.BinaryMessage, []byte("\x00echo")))
		if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "\x00echo" {
			t.Errorf("echo: %q %v", msg, err)
		}
	})
}

// TestRequestLog: plain requests and streams are logged with their status,
// the stream with its recording, and no credential.
func TestRequestLog(t *testing.T) {
	tgt := echoExecBackend(t)
	s := newFailingStore(t, false)
	keys := manifestKeys(t)
	rec := recording.New(recording.Config{Store: s, Mode: recording.ModeBestEffort, FlushInterval: time.Hour, Keys: keys})
	base := recordingProxy(t, rec, tgt)
	httpBase := strings.Replace(base, "ws://", "http://", 1)
	req, _ := http.NewRequest(http.MethodGet, httpBase+"/proxy/api/v1/namespaces?access_token=secret&limit=5", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	conn, _, err := dialExec(base)
	must(t, err)
	must(t, conn.WriteMessage(websocket.BinaryMessage, []byte("\x00typed")))
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	reader := recording.Reader{Store: s, Keys: keys}
	var requests []v1alpha1.RequestLogEntry
	deadline := time.Now().Add(5 * time.Second)
	for len(requests) < 2 && time.Now().Before(deadline) {
		// Run writes the log when it ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec.Run(ctx)
		requests = nil
		_, err = reader.Requests(context.Background(), "sre", "fix", 0, "", func(r *v1alpha1.RequestLogEntry) error {
			requests = append(requests, *r)
			return nil
		})
		must(t, err)
		time.Sleep(20 * time.Millisecond)
	}
	if len(requests) != 2 {
		t.Fatalf("request log %+v", requests)
	}
	get, exec := requests[0], requests[1]
	if get.Status != http.StatusOK || get.Path != "/api/v1/namespaces" || strings.Contains(get.Query, "secret") || get.BytesOut == 0 {
		t.Errorf("GET logged as %+v", get)
	}
	if exec.Status != http.StatusSwitchingProtocols || exec.Stream == "" || exec.Upgrade != "websocket" {
		t.Errorf("exec logged as %+v", exec)
	}
	opened, err := reader.OpenCast(context.Background(), "sre", "fix", exec.Stream, false)
	must(t, err)
	var cast bytes.Buffer
	must(t, opened.Write(context.Background(), &cast))
	if !strings.Contains(cast.String(), `"i", "typed"`) || strings.Contains(cast.String(), "secret") {
		t.Errorf("cast %s", cast.String())
	}
}

// TestRequestLogRequired: with --recording=required a session's requests
// are refused with a 503 saying why while its request log cannot be
// written, and served again once it is.
func TestRequestLogRequired(t *testing.T) {
	s := newFailingStore(t, true)
	rec := recording.New(recording.Config{Store: s, Mode: recording.ModeRequired, FlushInterval: time.Hour})
	base := strings.Replace(recordingProxy(t, rec, echoExecBackend(t)), "ws://", "http://", 1)
	flush := func() {
		// Run writes the log when it ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec.Run(ctx)
	}
	get := func() (int, string) {
		resp, err := http.Get(base + "/proxy/api/v1/namespaces")
		must(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("first request: %d %s", code, body)
	}
	flush()
	code, body := get()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--recording=required") || !strings.Contains(body, "the disk is full") {
		t.Errorf("with the request log not written: %d %s; want 503 saying why", code, body)
	}
	s.fail.Store(false)
	flush()
	if code, body := get(); code != http.StatusOK {
		t.Errorf("with the request log written: %d %s", code, body)
	}
}

// manifestKeys is a key to sign recordings' manifests with, as the server
// holds one, so that a test can read back what it recorded.
func manifestKeys(t testing.TB) *recording.ManifestKeys {
	t.Helper()
	keys, err := recording.ParseManifestKeys([]byte("test " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))))
	must(t, err)
	return keys
}
