// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/clock"
)

// TestWatchEndsWithStatusWhenSessionEnds: a watch, asked for with the
// watch parameter or on the legacy watch path, ends with a final event
// saying why when its session ends.
func TestWatchEndsWithStatusWhenSessionEnds(t *testing.T) {
	for _, path := range []string{"/api/v1/configmaps?watch=true", "/api/v1/watch/namespaces/default/configmaps"} {
		t.Run(path, func(t *testing.T) {
			backendDone := make(chan struct{})
			u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
				defer close(backendDone)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}`+"\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
			r := NewTracker(clock.RealClock{}, Limits{})
			tgt := target(u, tr)
			base := serveThroughProxy(t, r, tgt)

			open := gauge(t, openRequests)
			expired := counter(t, closedRequests.WithLabelValues("expired"))
			resp, err := http.Get(base + "/proxy" + path)
			must(t, err)
			defer resp.Body.Close()
			lines := bufio.NewScanner(resp.Body)
			if !lines.Scan() || !strings.Contains(lines.Text(), `"ADDED"`) {
				t.Fatalf("first event: %q", lines.Text())
			}
			if got := gauge(t, openRequests) - open; got != 1 {
				t.Errorf("open_requests went up by %v with the watch open, want 1", got)
			}
			ended := time.Now()
			r.End("s1", ErrExpired)
			if !lines.Scan() {
				t.Fatalf("no final event: %v", lines.Err())
			}
			var final struct {
				Type   string
				Object struct{ Reason, Message string }
			}
			must(t, json.Unmarshal(lines.Bytes(), &final))
			if final.Type != "ERROR" || final.Object.Reason != "Gone" || !strings.Contains(final.Object.Message, "the session expired") {
				t.Errorf("final event %s", lines.Text())
			}
			if lines.Scan() {
				t.Errorf("stream went on after the final event: %q", lines.Text())
			}
			select {
			case <-backendDone:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was not canceled")
			}
			if took := time.Since(ended); took > time.Second {
				t.Errorf("the stream ended %s after the session, want under 1s", took)
			}
			// The handler returns after the client saw the end of the stream.
			if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				return gauge(t, openRequests) == open && counter(t, closedRequests.WithLabelValues("expired")) == expired+1, nil
			}); err != nil {
				t.Errorf("open_requests %v (want %v), closed_requests_total{reason=expired} %v (want %v)",
					gauge(t, openRequests), open, counter(t, closedRequests.WithLabelValues("expired")), expired+1)
			}
		})
	}
}

func counter(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	must(t, err)
	return v
}

func gauge(t *testing.T, g metrics.GaugeMetric) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(g)
	must(t, err)
	return v
}

func TestUpgradedStreamClosedWhenSessionEnds(t *testing.T) {
	upstreamClosed := make(chan struct{})
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "test-stream" || r.URL.RawQuery != "watch=1" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer close(upstreamClosed)
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, conn) // echo until the proxy closes
	})
	r := NewTracker(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	base, _ := url.Parse(serveThroughProxy(t, r, tgt))

	raw, err := net.Dial("tcp", base.Host)
	must(t, err)
	defer raw.Close()
	fmt.Fprintf(raw, "GET /proxy/stream?watch=1 HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n", base.Host)
	br := bufio.NewReader(raw)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		t.Fatalf("upgrade answer %q %v", status, err)
	}
	for line, _ := br.ReadString('\n'); line != "\r\n" && line != ""; line, _ = br.ReadString('\n') {
	}
	fmt.Fprint(raw, "ping\n")
	if echo, err := br.ReadString('\n'); err != nil || echo != "ping\n" {
		t.Fatalf("echo %q %v", echo, err)
	}

	ended := time.Now()
	r.End("s1", ErrDeleted)
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("the stream is still open after the session ended")
	}
	if took := time.Since(ended); took > time.Second {
		t.Errorf("closed %s after the session ended, want under 1s", took)
	}
	select {
	case <-upstreamClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream side of the stream stayed open")
	}
}

// TestUpgradeEndedBeforeTheTargetAnswers ends a session while the target
// takes its time to answer an upgrade, as a kubelet may for exec: the
// stream must not start, and nothing of it may stay open.
func TestUpgradeEndedBeforeTheTargetAnswers(t *testing.T) {
	asked, backendGone := make(chan struct{}), make(chan struct{})
	u, tr := backend(t, func(w http.ResponseWriter, _ *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer close(backendGone)
		defer conn.Close()
		close(asked)
		time.Sleep(500 * time.Millisecond)
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, conn)
	})
	r := NewTracker(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	resp := &responder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, "/exec", resp).ServeHTTP(w, req)
	}))
	defer srv.Close()

	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	must(t, err)
	defer raw.Close()
	fmt.Fprint(raw, "GET /exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
	<-asked
	r.End("s1", ErrDeleted)
	_ = raw.SetDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(raw)
	if status, _ := br.ReadString('\n'); strings.Contains(status, "101") {
		for line, _ := br.ReadString('\n'); line != "\r\n" && line != ""; line, _ = br.ReadString('\n') {
		}
		fmt.Fprint(raw, "ping\n")
		if echo, err := br.ReadString('\n'); err == nil {
			t.Fatalf("the stream started after its session ended and echoed %q", echo)
		}
	}
	select {
	case <-backendGone:
	case <-time.After(3 * time.Second):
		t.Fatal("the target's side of the upgrade stayed open")
	}
	if !released(r, 3*time.Second) {
		t.Error("the connection still counts against the session")
	}
	if !apierrors.IsNotFound(resp.err) {
		t.Errorf("the client was told %v, want that the session is gone", resp.err)
	}
}

// TestWatchEndedBeforeTheTargetAnswers ends a session before the target
// answers a watch: the client gets the reason as a Status, and no watch
// event appended to it.
func TestWatchEndedBeforeTheTargetAnswers(t *testing.T) {
	asked := make(chan struct{})
	u, tr := backend(t, func(_ http.ResponseWriter, req *http.Request) {
		close(asked)
		<-req.Context().Done()
	})
	r := NewTracker(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	rec := httptest.NewRecorder()
	resp := &responder{w: rec}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := httptest.NewRequest(http.MethodGet, "/x?watch=true", nil)
		r.Handler(tgt, "/api/v1/configmaps", resp).ServeHTTP(rec, req)
	}()
	<-asked
	r.End("s1", ErrExpired)
	<-done
	if apierrors.ReasonForError(resp.err) != metav1.StatusReasonGone || !strings.Contains(resp.err.Error(), "expired") {
		t.Errorf("the client was told %v, want Gone saying the session expired", resp.err)
	}
	var status metav1.Status
	if err := json.NewDecoder(rec.Body).Decode(&status); err != nil || status.Reason != metav1.StatusReasonGone {
		t.Errorf("response %q is not the Status (%v)", rec.Body.String(), err)
	}
	if rec.Body.Len() != 0 {
		t.Errorf("something was written after the Status: %q", rec.Body.String())
	}
}

// TestWatchToAClientThatStoppedReading ends a session whose watch client
// no longer reads while the target floods it: the handler must still
// return, leaving nothing behind.
func TestWatchToAClientThatStoppedReading(t *testing.T) {
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		event := []byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + strings.Repeat("n", 4000) + `"}}}` + "\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(event); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	r := NewTracker(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	base, _ := url.Parse(serveThroughProxy(t, r, tgt))

	raw, err := net.Dial("tcp", base.Host)
	must(t, err)
	defer raw.Close()
	fmt.Fprintf(raw, "GET /proxy/api/v1/configmaps?watch=true HTTP/1.1\r\nHost: %s\r\n\r\n", base.Host)
	// Read nothing: the buffers between the proxy and the client fill up.
	time.Sleep(500 * time.Millisecond)
	ended := time.Now()
	r.End("s1", ErrExpired)
	if !released(r, 5*time.Second) {
		t.Fatal("the watch of a client that stopped reading outlived its session")
	}
	if took := time.Since(ended); took > 2*time.Second {
		t.Errorf("the watch ended %s after the session, want within the write deadline", took)
	}
}
