// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// statusResponder keeps the error it is given and writes it as the API
// server's responder does: a JSON Status, an internal error for one that
// is not a Status.
type statusResponder struct {
	err error
	w   http.ResponseWriter
}

func (r *statusResponder) Object(int, apiruntime.Object) {}

func (r *statusResponder) Error(err error) {
	r.err = err
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	r.w.Header().Set("Content-Type", "application/json")
	r.w.WriteHeader(int(status.Status().Code))
	_ = json.NewEncoder(r.w).Encode(status.Status())
}

var recordedSession = v1alpha1.RecordedSession{Namespace: "sre", Name: "fix", UID: "uid-1", Owner: "alice"}

// requestLogServer serves sessions/fix/recordings/requests in sre from
// dir's store.
func requestLogServer(t testing.TB, dir string) *httptest.Server {
	t.Helper()
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	rest := &RecordingsREST{reader: &recording.Reader{Store: local}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := genericapirequest.WithNamespace(req.Context(), "sre")
		h, err := rest.Connect(ctx, "fix", &clustergate.SessionProxyOptions{Path: "requests"}, &statusResponder{w: w})
		if err != nil {
			(&statusResponder{w: w}).Error(err)
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// logRequests writes n entries of the test session's request log to dir,
// flushed every flushEvery, each with a user agent of uaBytes.
func logRequests(t testing.TB, dir string, n, flushEvery, uaBytes int) {
	t.Helper()
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := recording.New(recording.Config{Store: local, Mode: recording.ModeBestEffort, Replica: "r1", FlushInterval: time.Hour})
	flush := func() {
		// Run writes the log when it ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec.Run(ctx)
	}
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	ua := strings.Repeat("u", uaBytes)
	for i := range n {
		rec.LogRequest(recordedSession, v1alpha1.RequestLogEntry{Time: at.Add(time.Duration(i) * time.Millisecond), Method: "GET",
			Path: fmt.Sprintf("/api/v1/namespaces/n%d", i), Status: 200, Duration: "1ms", UserAgent: ua})
		if i%flushEvery == flushEvery-1 {
			flush()
		}
	}
	flush()
}

func getRequestLog(srv *httptest.Server, query url.Values) (int, []byte, error) {
	resp, err := http.Get(srv.URL + "?" + query.Encode())
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// TestRequestLogPages: the request log is a SessionRequestLog list, read
// whole or in pages of limit that hand every entry exactly once.
func TestRequestLogPages(t *testing.T) {
	dir := t.TempDir()
	logRequests(t, dir, 40, 9, 10)
	srv := requestLogServer(t, dir)
	tests := []struct {
		name  string
		limit string
		pages int
	}{
		{"whole", "", 1},
		{"pages of 7", "7", 6},
		{"pages of 40", "40", 1},
		{"pages of 1000", "1000", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]int{}
			pages := 0
			for next := ""; pages == 0 || next != ""; pages++ {
				code, body, err := getRequestLog(srv, url.Values{"limit": {tt.limit}, "continue": {next}})
				if err != nil || code != http.StatusOK {
					t.Fatalf("page %d: %d %s %v", pages, code, body, err)
				}
				var page v1alpha1.SessionRequestLog
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatalf("page %d: %v: %s", pages, err, body)
				}
				if page.Kind != RequestLogKind || page.APIVersion != "clustergate.dev/v1alpha1" {
					t.Errorf("page %d is a %s %s", pages, page.APIVersion, page.Kind)
				}
				for _, r := range page.Items {
					seen[r.Path]++
				}
				next = page.Continue
			}
			if pages != tt.pages {
				t.Errorf("%d pages, want %d", pages, tt.pages)
			}
			for i := range 40 {
				if n := seen[fmt.Sprintf("/api/v1/namespaces/n%d", i)]; n != 1 {
					t.Errorf("entry %d read %d times", i, n)
				}
			}
		})
	}
	for _, query := range []url.Values{{"limit": {"-1"}}, {"limit": {"x"}}, {"continue": {"garbage"}}} {
		if code, body, _ := getRequestLog(srv, query); code != http.StatusBadRequest {
			t.Errorf("%v: %d %.200s, want 400", query, code, body)
		}
	}
}

// TestRequestLogReadError: a chunk the server cannot read is an error the
// client sees: a Status when nothing was sent yet, an aborted answer when
// entries were.
func TestRequestLogReadError(t *testing.T) {
	tests := []struct {
		name      string
		before    int // entries in a chunk read before the broken one
		wantError func(code int, body []byte, err error) bool
	}{
		{"a Status first", 0, func(code int, body []byte, err error) bool {
			return err == nil && code == http.StatusInternalServerError && strings.Contains(string(body), "line 2")
		}},
		{"an aborted answer", 2000, func(code int, body []byte, err error) bool {
			var page v1alpha1.SessionRequestLog
			return err != nil || json.Unmarshal(body, &page) != nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.before > 0 {
				logRequests(t, dir, tt.before, tt.before, 100)
			}
			broken := filepath.Join(dir, "sre/fix/uid-1/requests/r2-1-00000001.jsonl")
			if err := os.MkdirAll(filepath.Dir(broken), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(broken, []byte("{\"time\":\"2026-12-03T09:00:00Z\"}\n{\"time\":\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Written after the others.
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(broken, later, later); err != nil {
				t.Fatal(err)
			}
			code, body, err := getRequestLog(requestLogServer(t, dir), nil)
			if !tt.wantError(code, body, err) {
				t.Errorf("answered %d, %d bytes, error %v: %.300s", code, len(body), err, body)
			}
		})
	}
}

// heapWatcher discards an answer and samples the heap as it is written.
type heapWatcher struct {
	header http.Header
	bytes  int64
	peak   uint64
	// tail is the end of what was written.
	tail []byte
}

func (w *heapWatcher) Header() http.Header { return w.header }
func (w *heapWatcher) WriteHeader(int)     {}
func (w *heapWatcher) Write(b []byte) (int, error) {
	w.bytes += int64(len(b))
	w.tail = append(w.tail, b...)
	w.tail = w.tail[len(w.tail)-min(len(w.tail), 1024):]
	if w.bytes>>20 != (w.bytes-int64(len(b)))>>20 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.peak = max(w.peak, m.HeapAlloc)
	}
	return len(b), nil
}

// BenchmarkRequestLogRead reads a request log of about 50 MB (90,000
// entries of about 560 bytes, in chunks of 4 MB) whole and in pages of
// 500, and reports the heap's high-water mark, sampled every MiB
// written: it stays that of a chunk, whatever the log's length.
func BenchmarkRequestLogRead(b *testing.B) {
	dir := b.TempDir()
	logRequests(b, dir, 90000, 7000, 400)
	local, err := store.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	rest := &RecordingsREST{reader: &recording.Reader{Store: local}}
	ctx := genericapirequest.WithNamespace(context.Background(), "sre")
	for _, limit := range []string{"", "500"} {
		b.Run("limit="+limit, func(b *testing.B) {
			var written int64
			var peak uint64
			b.ReportAllocs()
			for b.Loop() {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				base := m.HeapAlloc
				w := &heapWatcher{header: http.Header{}}
				for next, pages := "", 0; pages == 0 || next != ""; pages++ {
					h, err := rest.Connect(ctx, "fix", &clustergate.SessionProxyOptions{Path: "requests"}, &statusResponder{w: w})
					if err != nil {
						b.Fatal(err)
					}
					h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/?"+url.Values{"limit": {limit}, "continue": {next}}.Encode(), nil))
					next = continueOf(b, w)
				}
				written = w.bytes
				peak = max(peak, w.peak-min(w.peak, base))
			}
			b.ReportMetric(float64(written)/(1<<20), "answer-MiB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// continueOf is the continue token of the page last written, read from
// its tail.
func continueOf(tb testing.TB, w *heapWatcher) string {
	const meta = `],"metadata":`
	i := strings.LastIndex(string(w.tail), meta)
	var m metav1.ListMeta
	if i < 0 || json.Unmarshal(w.tail[i+len(meta):len(w.tail)-1], &m) != nil {
		tb.Fatalf("a page ends in %q", w.tail)
	}
	return m.Continue
}
