// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

func TestHandlerStripsCallerIdentityAndKeepsPathAndQuery(t *testing.T) {
	var got *http.Request
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) { got = r; _, _ = io.WriteString(w, "ok") })
	r := NewTracker(clock.RealClock{}, Limits{})
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
	NewTracker(clock.RealClock{}, Limits{}).Handler(tgt, "/api", &responder{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code == http.StatusFound || rec.Header().Get("Location") != "" {
		t.Errorf("a redirect from the target reached the client: %d %v", rec.Code, rec.Header())
	}
}

func TestHandlerRefusals(t *testing.T) {
	u, tr := backend(t, func(http.ResponseWriter, *http.Request) {})
	tests := []struct {
		name   string
		setup  func(r *Tracker)
		check  func(error) bool
		metric string
	}{
		{name: "deleted", setup: func(r *Tracker) { r.End("s1", ErrDeleted) }, check: apierrors.IsNotFound, metric: "deleted"},
		{name: "expired", setup: func(r *Tracker) { r.End("s1", ErrExpired) }, check: func(err error) bool { return apierrors.ReasonForError(err) == "Gone" }, metric: "expired"},
		{name: "not ready", setup: func(r *Tracker) { r.End("s1", ErrNotReady) }, check: apierrors.IsServiceUnavailable, metric: "not_ready"},
		{name: "over the limit", setup: func(r *Tracker) { _, _, _ = r.Open(context.Background(), "other", "alice", time.Now().Add(time.Hour)) },
			check: apierrors.IsTooManyRequests, metric: "owner_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewTracker(clock.RealClock{}, Limits{PerOwner: 1})
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
func serveThroughProxy(tb testing.TB, r *Tracker, tgt Target) string {
	tb.Helper()
	srv := httptest.NewServer(proxyHandler(r, tgt))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// serveThroughProxyTLS is serveThroughProxy over TLS, as clustergate serves;
// it returns the URL and the client's TLS configuration.
func serveThroughProxyTLS(tb testing.TB, r *Tracker, tgt Target) (string, *tls.Config) {
	tb.Helper()
	srv := httptest.NewTLSServer(proxyHandler(r, tgt))
	tb.Cleanup(srv.Close)
	return srv.URL, srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func proxyHandler(r *Tracker, tgt Target) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
	})
}
