package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
)

// Target is what a proxied request needs of its session.
type Target struct {
	// UID, Namespace and Name identify the session.
	UID             types.UID
	Namespace, Name string
	// Owner is the session's owner.
	Owner string
	// ExpiresAt ends every connection of the session.
	ExpiresAt time.Time
	// Backend is the target's kube-apiserver.
	Backend *url.URL
	// Transport reaches the backend with the session's credentials and
	// verifies it with the target's CA.
	Transport *http.Transport
}

// strippedHeaderPrefixes never reach the target: the caller's credentials
// and identity claims. The target sees only the session's credentials.
var strippedHeaderPrefixes = []string{"Authorization", "Impersonate-", "X-Remote-", "Proxy-Authorization"}

// Handler returns the handler of one proxied request to path (below the
// proxy subresource) of a session. Setup errors go to responder as Status
// objects.
func (r *Registry) Handler(t Target, path string, responder rest.Responder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := r.clock.Now()
		ctx, release, err := r.Open(req.Context(), t.UID, t.Owner, t.ExpiresAt)
		if err != nil {
			refusedRequests.WithLabelValues(reasonLabel(err)).Inc()
			responder.Error(statusFor(err, t))
			return
		}
		defer release()
		openRequests.Inc()
		defer openRequests.Dec()
		klog.InfoS("Proxied request opened", "session", klog.KRef(t.Namespace, t.Name), "owner", t.Owner,
			"verb", req.Method, "path", path, "upgrade", req.Header.Get("Upgrade"))

		for name := range req.Header {
			for _, prefix := range strippedHeaderPrefixes {
				if strings.HasPrefix(http.CanonicalHeaderKey(name), prefix) {
					req.Header.Del(name)
				}
			}
		}
		body := &countingReader{ReadCloser: req.Body}
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = body
		}
		cw := &connWriter{ResponseWriter: w}
		// An upgraded stream no longer heeds the request context: close its
		// client connection when the session ends, which ends both sides.
		stop := context.AfterFunc(ctx, cw.closeHijacked)
		defer stop()

		location := *t.Backend
		location.Path = strings.TrimSuffix(location.Path, "/") + "/" + strings.TrimPrefix(path, "/")
		// The upgrade path of the handler takes the query from Location only.
		location.RawQuery = req.URL.RawQuery
		h := utilproxy.NewUpgradeAwareHandler(&location, t.Transport, false, false, errorResponder{responder})
		h.UseLocationHost = true
		h.RejectForwardingRedirects = true

		defer func() {
			reason := "client or target closed"
			cause := context.Cause(ctx)
			ended := cause != nil && !errors.Is(cause, context.Canceled)
			if !ended {
				cause = nil
			}
			closedRequests.WithLabelValues(reasonLabel(cause)).Inc()
			if v := recover(); v != nil && (v != http.ErrAbortHandler || !ended) {
				panic(v)
			}
			// A stream cut off by the session's end is not an abort: it
			// ends cleanly, a watch with a final event saying why.
			if ended {
				reason = cause.Error()
				cw.finishWatch(req, cause, t)
			}
			klog.InfoS("Proxied request closed", "session", klog.KRef(t.Namespace, t.Name), "owner", t.Owner,
				"verb", req.Method, "path", path, "bytesIn", body.n.Load()+cw.hijackedIn.Load(),
				"bytesOut", cw.written.Load()+cw.hijackedOut.Load(), "duration", r.clock.Since(start).Round(time.Millisecond), "closeReason", reason)
		}()
		h.ServeHTTP(cw, req.WithContext(ctx))
	})
}

// statusFor turns a refusal of the registry into a Status error.
func statusFor(err error, t Target) error {
	switch {
	case errors.Is(err, ErrTooManyForSession), errors.Is(err, ErrTooManyForOwner):
		return apierrors.NewTooManyRequests(err.Error(), 1)
	case errors.Is(err, ErrExpired):
		return apierrors.NewGone(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, err))
	case errors.Is(err, ErrDeleted):
		return apierrors.NewNotFound(schema.GroupResource{Group: "clustergate.dev", Resource: "sessions"}, t.Name)
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, err))
}

// finishWatch ends a JSON watch that the session's end cut off with a final
// ERROR event whose Status says why, so that kubectl reports it.
func (cw *connWriter) finishWatch(req *http.Request, cause error, t Target) {
	watch := req.URL.Query().Get("watch")
	if cw.hijacked.Load() || (watch != "true" && watch != "1") ||
		!strings.HasPrefix(cw.Header().Get("Content-Type"), "application/json") {
		return
	}
	status := apierrors.NewGone(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, cause)).Status()
	status.Kind, status.APIVersion = "Status", "v1"
	event, err := json.Marshal(map[string]any{"type": "ERROR", "object": status})
	if err != nil {
		return
	}
	_, _ = cw.ResponseWriter.Write(append(event, '\n'))
	if f, ok := cw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type errorResponder struct{ rest.Responder }

func (e errorResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	e.Responder.Error(apierrors.NewServiceUnavailable(fmt.Sprintf("the session's target: %v", err)))
}

// connWriter counts what is written to the client and remembers a hijacked
// connection so that it can be closed from outside.
type connWriter struct {
	http.ResponseWriter
	written                 atomic.Int64
	hijackedIn, hijackedOut atomic.Int64
	hijacked                atomic.Bool

	mu   sync.Mutex
	conn net.Conn
}

func (c *connWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.written.Add(int64(n))
	return n, err
}

func (c *connWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands out the client connection and keeps it for closeHijacked.
func (c *connWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := c.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be upgraded")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	counted := &countingConn{Conn: conn, in: &c.hijackedIn, out: &c.hijackedOut}
	c.mu.Lock()
	c.conn = counted
	c.mu.Unlock()
	c.hijacked.Store(true)
	return counted, rw, nil
}

func (c *connWriter) closeHijacked() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		_ = c.conn.Close()
	}
}

type countingConn struct {
	net.Conn
	in, out *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

type countingReader struct {
	io.ReadCloser
	n atomic.Int64
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	r.n.Add(int64(n))
	return n, err
}
