package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func TestRegistry(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		run    func(t *testing.T, r *Registry, clk *clocktesting.FakeClock)
	}{
		{name: "end cancels every connection with its reason", run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			a, releaseA, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseA()
			b, releaseB, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseB()
			other, releaseOther, err := r.Open(context.Background(), "s2", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseOther()
			r.End("s1", ErrDeleted)
			for _, ctx := range []context.Context{a, b} {
				if !errors.Is(context.Cause(ctx), ErrDeleted) {
					t.Errorf("cause = %v, want ErrDeleted", context.Cause(ctx))
				}
			}
			if other.Err() != nil {
				t.Errorf("another session's connection ended")
			}
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrDeleted) {
				t.Errorf("open after end: %v, want ErrDeleted", err)
			}
		}},
		{name: "the timer at expiresAt ends connections", run: func(t *testing.T, r *Registry, clk *clocktesting.FakeClock) {
			ctx, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Minute))
			must(t, err)
			defer release()
			clk.Step(59 * time.Second)
			if ctx.Err() != nil {
				t.Fatal("ended before expiry")
			}
			clk.Step(time.Second)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("not ended at expiry")
			}
			if !errors.Is(context.Cause(ctx), ErrExpired) {
				t.Errorf("cause = %v, want ErrExpired", context.Cause(ctx))
			}
		}},
		{name: "not ready refuses until resumed", run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			ctx, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer release()
			r.End("s1", ErrNotReady)
			if !errors.Is(context.Cause(ctx), ErrNotReady) {
				t.Errorf("cause = %v, want ErrNotReady", context.Cause(ctx))
			}
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrNotReady) {
				t.Errorf("open while not ready: %v, want ErrNotReady", err)
			}
			r.Resume("s1")
			_, again, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			again()
		}},
		{name: "resume does not lift a deletion", run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			r.End("s1", ErrDeleted)
			r.Resume("s1")
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrDeleted) {
				t.Errorf("open after resume of a deleted session: %v, want ErrDeleted", err)
			}
		}},
		{name: "ended sessions are forgotten after a while", run: func(t *testing.T, r *Registry, clk *clocktesting.FakeClock) {
			r.End("s1", ErrDeleted)
			clk.Step(tombstoneTTL)
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				return len(r.sessions) == 0, nil
			}); err != nil {
				t.Errorf("the ended session is still remembered after %s", tombstoneTTL)
			}
		}},
		{name: "expired sessions are refused", run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			if _, _, err := r.Open(context.Background(), "s1", "alice", start); !errors.Is(err, ErrExpired) {
				t.Errorf("got %v, want ErrExpired", err)
			}
		}},
		{name: "per-session limit", limits: Limits{PerSession: 2}, run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			_, r1, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			_, r2, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer r2()
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrTooManyForSession) {
				t.Errorf("third: %v, want ErrTooManyForSession", err)
			}
			r1()
			_, r3, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			r3()
			if n := r.OpenConnections("s1"); n != 1 {
				t.Errorf("open connections = %d, want 1", n)
			}
		}},
		{name: "per-owner limit spans sessions", limits: Limits{PerOwner: 1}, run: func(t *testing.T, r *Registry, _ *clocktesting.FakeClock) {
			_, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer release()
			if _, _, err := r.Open(context.Background(), "s2", "alice", start.Add(time.Hour)); !errors.Is(err, ErrTooManyForOwner) {
				t.Errorf("got %v, want ErrTooManyForOwner", err)
			}
			_, other, err := r.Open(context.Background(), "s3", "bob", start.Add(time.Hour))
			must(t, err)
			other()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			tt.run(t, NewRegistry(clk, tt.limits), clk)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// responder records the error a handler reports.
// responder keeps the error it is given and, with w, writes it as a JSON
// Status the way the API server's responder does.
type responder struct {
	err error
	w   http.ResponseWriter
}

func (r *responder) Object(int, runtime.Object) {}
func (r *responder) Error(err error) {
	r.err = err
	var status apierrors.APIStatus
	if r.w != nil && errors.As(err, &status) {
		r.w.Header().Set("Content-Type", "application/json")
		r.w.WriteHeader(int(status.Status().Code))
		_ = json.NewEncoder(r.w).Encode(status.Status())
	}
}

// backend is a TLS server standing in for a target kube-apiserver.
func backend(tb testing.TB, h http.HandlerFunc) (*url.URL, *http.Transport) {
	tb.Helper()
	srv := httptest.NewTLSServer(h)
	tb.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/prefix")
	tr := srv.Client().Transport.(*http.Transport).Clone()
	// Upgraded streams speak HTTP/1.1.
	tr.ForceAttemptHTTP2 = false
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	return u, tr
}

// released waits up to timeout until r holds no connection of target's
// session, and says whether it came to that.
func released(r *Registry, timeout time.Duration) bool {
	return wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return r.OpenConnections("s1") == 0, nil
	}) == nil
}

// target is session sre/fix of alice, expiring in an hour, at u.
func target(u *url.URL, tr *http.Transport) Target {
	return Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice", ExpiresAt: time.Now().Add(time.Hour), Backend: u, Transport: tr}
}

func TestHandlerStripsCallerIdentityAndKeepsPathAndQuery(t *testing.T) {
	var got *http.Request
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) { got = r; _, _ = io.WriteString(w, "ok") })
	r := NewRegistry(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	h := r.Handler(tgt, "/api/v1/namespaces", &responder{})

	req := httptest.NewRequest(http.MethodGet, "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix/proxy/api/v1/namespaces?limit=5", nil)
	for k, v := range map[string]string{
		"Authorization": "Bearer stolen", "Impersonate-User": "root", "Impersonate-Group": "system:masters",
		"X-Remote-User": "alice", "X-Remote-Group": "sre", "Accept": "application/json",
		"Cookie": "session=stolen", "X-Forwarded-For": "6.6.6.6", "X-Forwarded-Host": "evil.example.com",
		"X-Forwarded-Proto": "http", "Forwarded": "for=6.6.6.7", "X-Real-Ip": "6.6.6.8",
		"Sec-WebSocket-Protocol": "v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.c3RvbGVu, v4.channel.k8s.io",
	} {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("response %d %q", rec.Code, rec.Body.String())
	}
	if got.URL.Path != "/prefix/api/v1/namespaces" || got.URL.RawQuery != "limit=5" {
		t.Errorf("backend saw %s?%s", got.URL.Path, got.URL.RawQuery)
	}
	for name := range got.Header {
		for _, p := range strippedHeaderPrefixes {
			// Added on the way out; checked below.
			if strings.HasPrefix(name, p) && name != "X-Forwarded-For" {
				t.Errorf("header %s reached the target", name)
			}
		}
	}
	// The address the target sees is the one this server saw, not one the
	// caller wrote.
	if xff := got.Header.Values("X-Forwarded-For"); len(xff) != 1 || xff[0] != "192.0.2.1" {
		t.Errorf("X-Forwarded-For at the target %q, want only the caller's address as this server saw it", xff)
	}
	if got.Header.Get("Accept") != "application/json" {
		t.Errorf("ordinary headers must pass: Accept = %q", got.Header.Get("Accept"))
	}
	if p := got.Header.Values("Sec-WebSocket-Protocol"); len(p) != 1 || p[0] != "v5.channel.k8s.io, v4.channel.k8s.io" {
		t.Errorf("WebSocket subprotocols at the target %q, want the channel ones without the bearer token", p)
	}
	if r.OpenConnections("s1") != 0 {
		t.Errorf("connection not released")
	}
}

func TestHandlerRejectsRedirects(t *testing.T) {
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://evil.example.com/", http.StatusFound)
	})
	tgt := target(u, tr)
	rec := httptest.NewRecorder()
	NewRegistry(clock.RealClock{}, Limits{}).Handler(tgt, "/api", &responder{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code == http.StatusFound || rec.Header().Get("Location") != "" {
		t.Errorf("a redirect from the target reached the client: %d %v", rec.Code, rec.Header())
	}
}

func TestHandlerRefusals(t *testing.T) {
	u, tr := backend(t, func(http.ResponseWriter, *http.Request) {})
	tests := []struct {
		name   string
		setup  func(r *Registry)
		check  func(error) bool
		metric string
	}{
		{name: "deleted", setup: func(r *Registry) { r.End("s1", ErrDeleted) }, check: apierrors.IsNotFound, metric: "deleted"},
		{name: "expired", setup: func(r *Registry) { r.End("s1", ErrExpired) }, check: func(err error) bool { return apierrors.ReasonForError(err) == "Gone" }, metric: "expired"},
		{name: "not ready", setup: func(r *Registry) { r.End("s1", ErrNotReady) }, check: apierrors.IsServiceUnavailable, metric: "not_ready"},
		{name: "over the limit", setup: func(r *Registry) { _, _, _ = r.Open(context.Background(), "other", "alice", time.Now().Add(time.Hour)) },
			check: apierrors.IsTooManyRequests, metric: "owner_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(clock.RealClock{}, Limits{PerOwner: 1})
			tt.setup(r)
			resp := &responder{}
			tgt := target(u, tr)
			refused := counter(t, refusedRequests.WithLabelValues(tt.metric))
			r.Handler(tgt, "/api", resp).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
			if !tt.check(resp.err) {
				t.Errorf("error %v", resp.err)
			}
			if got := counter(t, refusedRequests.WithLabelValues(tt.metric)) - refused; got != 1 {
				t.Errorf("refused_requests_total{reason=%q} went up by %v, want 1", tt.metric, got)
			}
		})
	}
}

// serveThroughProxy runs the handler behind a real HTTP server, as the
// aggregated server does, and returns its URL.
func serveThroughProxy(tb testing.TB, r *Registry, tgt Target) string {
	tb.Helper()
	srv := httptest.NewServer(proxyHandler(r, tgt))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// serveThroughProxyTLS is serveThroughProxy over TLS, as clustergate serves;
// it returns the URL and the client's TLS configuration.
func serveThroughProxyTLS(tb testing.TB, r *Registry, tgt Target) (string, *tls.Config) {
	tb.Helper()
	srv := httptest.NewTLSServer(proxyHandler(r, tgt))
	tb.Cleanup(srv.Close)
	return srv.URL, srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func proxyHandler(r *Registry, tgt Target) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
	})
}

func TestWatchEndsWithStatusWhenSessionEnds(t *testing.T) {
	backendDone := make(chan struct{})
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(backendDone)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	r := NewRegistry(clock.RealClock{}, Limits{})
	tgt := target(u, tr)
	base := serveThroughProxy(t, r, tgt)

	open := gauge(t, openRequests)
	expired := counter(t, closedRequests.WithLabelValues("expired"))
	resp, err := http.Get(base + "/proxy/api/v1/configmaps?watch=true")
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
	r := NewRegistry(clock.RealClock{}, Limits{})
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
	r := NewRegistry(clock.RealClock{}, Limits{})
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
	r := NewRegistry(clock.RealClock{}, Limits{})
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
	r := NewRegistry(clock.RealClock{}, Limits{})
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
