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
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
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
	// Reason is the session's justification, logged with every request.
	Reason string
	// ExpiresAt ends every connection of the session.
	ExpiresAt time.Time
	// Backend is the target's kube-apiserver.
	Backend *url.URL
	// Transport reaches the backend with the session's credentials and
	// verifies it with the target's CA.
	Transport *http.Transport
}

// strippedHeaderPrefixes never reach the target: the caller's credentials
// and identity claims, which the target must not see or trust (it sees only
// the session's credentials), and the caller's claims about where the
// request came from, which would land in the target's audit log as source
// addresses. The address the target sees is the one this server saw,
// added on the way out.
var strippedHeaderPrefixes = []string{
	"Authorization", "Proxy-Authorization", "Impersonate-", "X-Remote-", "Cookie",
	"X-Forwarded-", "Forwarded", "X-Real-Ip",
}

// endWriteTimeout is how long a streamed response may still take to reach
// its client once the session ended: enough for the final watch event, and
// within the second in which every stream of the session must end.
const endWriteTimeout = 500 * time.Millisecond

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
		// Decided on the request as the caller sent it, as the server's
		// request timeout was.
		longRunning := LongRunning(req, path)
		klog.InfoS("Proxied request opened", "session", klog.KRef(t.Namespace, t.Name), "owner", t.Owner, "reason", t.Reason,
			"verb", req.Method, "path", path, "upgrade", req.Header.Get("Upgrade"), "longRunning", longRunning)

		stripCallerCredentials(req.Header)
		body := &countingReader{ReadCloser: req.Body}
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = body
		}
		cw := &connWriter{ResponseWriter: w, websocket: strings.EqualFold(req.Header.Get("Upgrade"), "websocket"),
			ended: func() error {
				if cause := sessionEnd(ctx); cause != nil {
					return fmt.Errorf("session %s/%s: %w", t.Namespace, t.Name, cause)
				}
				return nil
			}}
		// When the session ends: an upgraded stream no longer heeds the
		// request context, so close its client connection, which ends both
		// sides; a streamed response gets a write deadline, so that a client
		// that stopped reading cannot hold the handler. (Ordinary requests
		// are bounded by the request timeout, whose filter may return before
		// this handler does.)
		var endMu sync.Mutex
		returned := false
		stop := context.AfterFunc(ctx, func() {
			why := cw.ended()
			if why == nil {
				return
			}
			cw.closeHijacked(why)
			endMu.Lock()
			defer endMu.Unlock()
			// The response writer is the server's once the handler returned.
			if !returned && !cw.hijacked.Load() && longRunning {
				_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(endWriteTimeout))
			}
		})
		defer func() {
			// Also waits for a callback that already runs.
			stop()
			endMu.Lock()
			returned = true
			endMu.Unlock()
		}()
		transport := t.Transport
		if httpstream.IsUpgradeRequest(req) {
			transport = boundTo(ctx, t.Transport)
		}

		location := *t.Backend
		location.Path = strings.TrimSuffix(location.Path, "/") + "/" + strings.TrimPrefix(path, "/")
		// The upgrade path of the handler takes the query from Location only.
		location.RawQuery = req.URL.RawQuery
		h := utilproxy.NewUpgradeAwareHandler(&location, transport, false, false, errorResponder{responder, t})
		h.UseLocationHost = true
		h.RejectForwardingRedirects = true

		defer func() {
			reason := "client or target closed"
			cause := sessionEnd(ctx)
			ended := cause != nil
			closedRequests.WithLabelValues(reasonLabel(cause)).Inc()
			observeDuration(wayAggregated, req, path, r.clock.Since(start))
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

// sessionEnd is why the session ended a connection's context, or nil when
// something else did: the client went away, the request timed out, or the
// handler returned.
func sessionEnd(ctx context.Context) error {
	cause := context.Cause(ctx)
	for _, end := range []error{ErrExpired, ErrDeleted, ErrNotReady} {
		if errors.Is(cause, end) {
			return cause
		}
	}
	return nil
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
	if cw.hijacked.Load() || !cw.answered.Load() || !queryTrue(req.URL.Query(), "watch") ||
		!strings.HasPrefix(cw.Header().Get("Content-Type"), "application/json") {
		return
	}
	status := apierrors.NewGone(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, cause)).Status()
	status.Kind, status.APIVersion = "Status", "v1"
	event, err := json.Marshal(map[string]any{"type": "ERROR", "object": status})
	if err != nil {
		return
	}
	// An event cut off mid-line is lost; the final one stands on its own.
	if cw.midLine.Load() {
		event = append([]byte{'\n'}, event...)
	}
	_, _ = cw.ResponseWriter.Write(append(event, '\n'))
	if f, ok := cw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// stripCallerCredentials removes the caller's credentials and identity
// claims: the target sees only the session's credentials.
func stripCallerCredentials(h http.Header) {
	for name := range h {
		for _, prefix := range strippedHeaderPrefixes {
			if strings.HasPrefix(http.CanonicalHeaderKey(name), prefix) {
				h.Del(name)
			}
		}
	}
	// A WebSocket client may carry a bearer token as a subprotocol.
	var protocols []string
	for _, value := range h.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, bearerProtocolPrefix) {
				protocols = append(protocols, p)
			}
		}
	}
	h.Del("Sec-Websocket-Protocol")
	if len(protocols) > 0 {
		h.Set("Sec-Websocket-Protocol", strings.Join(protocols, ", "))
	}
}

// bearerProtocolPrefix marks a WebSocket subprotocol that carries a bearer
// token, as Kubernetes clients send it.
const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// boundTo returns a copy of transport whose connections close when ctx
// ends. An upgraded stream's connection to the target lives outside the
// transport's pool, and the handler waits for the target's answer to the
// upgrade without heeding the context: closing the connection is what ends
// that wait when the session ends first.
func boundTo(ctx context.Context, transport *http.Transport) *http.Transport {
	bound := transport.Clone()
	dial := transport.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	bound.DialContext = func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(dialCtx, network, addr)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { _ = conn.Close() })
		return conn, nil
	}
	return bound
}

// errorResponder answers a failure to reach the target; when the session
// ended meanwhile, it says so instead.
type errorResponder struct {
	rest.Responder
	target Target
}

func (e errorResponder) Error(_ http.ResponseWriter, req *http.Request, err error) {
	if cause := sessionEnd(req.Context()); cause != nil {
		e.Responder.Error(statusFor(cause, e.target))
		return
	}
	e.Responder.Error(apierrors.NewServiceUnavailable(fmt.Sprintf("the session's target: %v", err)))
}

// connWriter counts what is written to the client, knows whether the
// target's answer reached it, and remembers a hijacked connection so that it
// can be closed from outside.
type connWriter struct {
	http.ResponseWriter
	written                 atomic.Int64
	hijackedIn, hijackedOut atomic.Int64
	hijacked                atomic.Bool
	// answered is set once the target's status line was passed on;
	// midLine while the last byte written did not end a line.
	answered, midLine atomic.Bool

	// websocket is set for a WebSocket upgrade, whose end by the session
	// is announced with a close frame; ended says why the session ended,
	// nil while it has not.
	websocket bool
	ended     func() error

	mu sync.Mutex
	// conn is the hijacked client connection as the handler uses it; raw
	// is the network connection beneath it.
	conn, raw net.Conn
	// closed is set when the session ended: no connection is hijacked
	// after that.
	closed bool
}

func (c *connWriter) WriteHeader(code int) {
	c.answered.Store(true)
	c.ResponseWriter.WriteHeader(code)
}

func (c *connWriter) Write(b []byte) (int, error) {
	c.answered.Store(true)
	n, err := c.ResponseWriter.Write(b)
	c.written.Add(int64(n))
	if n > 0 {
		c.midLine.Store(b[n-1] != '\n')
	}
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
	c.mu.Lock()
	defer c.mu.Unlock()
	// Still unhijacked, the connection can carry the refusal.
	if c.closed {
		return nil, nil, errors.New("the session ended")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.raw = conn
	if tc, ok := conn.(*tls.Conn); ok {
		c.raw = tc.NetConn()
	}
	c.conn = &countingConn{Conn: conn, in: &c.hijackedIn, out: &c.hijackedOut}
	if c.websocket {
		c.conn = &websocketConn{Conn: c.conn, raw: c.raw, ended: c.ended}
	}
	c.hijacked.Store(true)
	return c.conn, rw, nil
}

// closeHijacked ends a hijacked stream because its session ended: a
// WebSocket one with a close frame saying why, then the network connection
// at once. (Closing TLS would first send an alert, which a client that
// stopped reading could hold up for seconds.)
func (c *connWriter) closeHijacked(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn == nil {
		return
	}
	if ws, ok := c.conn.(*websocketConn); ok {
		ws.finish(why)
	}
	_ = c.raw.Close()
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
