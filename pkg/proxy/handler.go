// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/streaming/pkg/httpstream"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
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
	// TargetName names the session's target in recordings and deny
	// rules, e.g. "shoot/local".
	TargetName string
	// Level is the session's access level, which deny rules match.
	Level string
	// Scope are the namespaces the session is scoped to; empty is the
	// whole target.
	Scope []string
	// ExpiresAt ends every connection of the session.
	ExpiresAt time.Time
	// IdleAt, the session's idle deadline as read (zero: none), ends them
	// too, unless a use recorded since moves it later.
	IdleAt time.Time
	// ResourceVersion and LastUsedAt are the session's as read: where the
	// record of its last use starts from when this replica has none.
	ResourceVersion string
	LastUsedAt      time.Time
	// Backend is the target's kube-apiserver.
	Backend *url.URL
	// Transport reaches the backend with the session's credentials and
	// verifies it with the target's CA.
	Transport *http.Transport
	// Way is how the request came in; empty is WayAggregated.
	Way Way
	// Subject is what SessionLocks match the request on: the session's
	// recorded owner, namespace and target, and the requester as
	// authenticated for this request. Nil matches the session alone.
	Subject *v1alpha1.LockSubject
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

// Handler returns the handler of one request to path of a session's
// target, whichever way it came in. Refusals go to responder as Status
// objects.
func (r *Tracker) Handler(t Target, path string, responder rest.Responder) http.Handler {
	if t.Way == "" {
		t.Way = WayAggregated
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, err := r.open(t, path, w, req)
		if err != nil {
			refusedRequests.WithLabelValues(reasonLabel(err)).Inc()
			status := statusFor(err, t)
			(&proxiedRequest{tracker: r, target: t, path: path, start: r.clock.Now()}).logRequest(req, statusOf(status), err.Error())
			responder.Error(status)
			return
		}
		// Deferred in this order, so that the request is finished (its
		// final watch event written, counted and logged) before the session
		// lets go of it.
		defer p.close()
		defer p.finish(req)
		p.serve(w, req, responder)
	})
}

// proxiedRequest is one request on its way to a session's target, in the
// steps every way in shares: open admits it to the tracker; serve strips
// the caller's credentials, arms the session's end and forwards it; finish
// ends a stream the session cut off cleanly, counts and logs it; close lets
// go of the session.
type proxiedRequest struct {
	tracker *Tracker
	target  Target
	path    string
	start   time.Time
	// ctx ends when the session ends (expiry, delete, no longer Ready) or
	// the request does; release gives the request's place back.
	ctx     context.Context
	release func()
	// longRunning is decided on the request as the caller sent it, as the
	// server's request timeout was; watch with it, a watch's end gets a
	// final event.
	longRunning bool
	watch       bool
	body        *countingReader
	cw          *connWriter
	// inspected is what recording makes of the request.
	inspected inspection
	// stream records an interactive stream, if this request is one;
	// recordingFailed is set when its recording failed and ended it.
	stream          *recording.Stream
	recordingFailed atomic.Pointer[error]
	// moderated is set for an interactive stream of a session whose
	// access level requires a moderator: it waits for one.
	moderated *moderatedStream

	// refused is why the request was refused before it was forwarded.
	refused error

	// disarm stops the reaction to the session's end; returned tells it
	// that the response writer is the server's again.
	disarm   func() bool
	endMu    sync.Mutex
	returned bool
}

// open admits a request to the tracker, within the session's and the
// owner's limits, and logs it. A request outside the session's scope or
// held by a deny rule, and under --recording=required one that cannot be
// recorded, is refused first: it takes no place and is no use of the
// session.
func (r *Tracker) open(t Target, path string, w http.ResponseWriter, req *http.Request) (*proxiedRequest, error) {
	start := r.clock.Now()
	tr := &targetRequest{req: req, path: path}
	if err := r.checkAccess(req.Context(), t, tr); err != nil {
		return nil, err
	}
	moderated := r.access.RequiresModerator(t.Level)
	inspected, err := r.inspectFor(tr, moderated)
	if err != nil {
		return nil, err
	}
	await := false
	if moderated {
		if await, err = moderationFor(inspected, r.recorder != nil); err != nil {
			return nil, err
		}
	}
	ctx, release, err := r.openRequest(req.Context(), t)
	if err != nil {
		return nil, err
	}
	var m *moderatedStream
	if await {
		// Moderation ends the stream with its own cause.
		var end context.CancelCauseFunc
		ctx, end = context.WithCancelCause(ctx)
		m = newModeratedStream(t, r.moderation, end)
		registered := release
		release = func() {
			end(nil)
			registered()
		}
	}
	if r.uses != nil {
		// A request uses the session while it is open: its end is the
		// last use until another comes.
		r.uses.opened(t)
		registered := release
		release = sync.OnceFunc(func() {
			registered()
			r.uses.closed(t.UID)
		})
	}
	openRequests.Inc()
	p := &proxiedRequest{tracker: r, target: t, path: path, start: start, ctx: ctx, release: release, body: &countingReader{ReadCloser: req.Body},
		inspected: inspected, moderated: m}
	p.longRunning, p.watch = classify(tr)
	upgrade := strings.ToLower(req.Header.Get("Upgrade"))
	p.cw = &connWriter{ResponseWriter: w, framed: upgrade == "websocket" || strings.HasPrefix(upgrade, "spdy/"),
		ended: func() error {
			if cause := sessionEnd(ctx); cause != nil {
				return fmt.Errorf("session %s/%s: %w", t.Namespace, t.Name, cause)
			}
			return nil
		}}
	// Every request is logged as it closes; a stream, which may stay open
	// for hours, also as it opens. A response the client reads whole is
	// gathered (bufferBody).
	if p.longRunning {
		klog.InfoS("Proxied request opened", "session", klog.KRef(t.Namespace, t.Name), "owner", logString(t.Owner), "reason", logString(t.Reason),
			"way", logString(t.Way), "verb", logString(req.Method), "path", logString(path), "upgrade", logString(req.Header.Get("Upgrade")),
			"longRunning", logBool(p.longRunning))
	} else {
		p.cw.bufferBody()
	}
	return p, nil
}

// serve forwards the request to the target until it is answered, the client
// or target closes, or the session ends.
func (p *proxiedRequest) serve(w http.ResponseWriter, req *http.Request, responder rest.Responder) {
	defer p.cw.flushBody()
	t := p.target
	stripCallerCredentials(req.Header)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = p.body
	}
	if err := refuseUpgradeBody(req, t); err != nil {
		p.refused = err
		responder.Error(err)
		return
	}
	if err := p.openRecording(); err != nil {
		p.refused = err
		responder.Error(err)
		return
	}
	if p.longRunning {
		p.disarm = context.AfterFunc(p.ctx, func() { p.sessionEnded(w) })
	}

	location := *t.Backend
	location.Path = strings.TrimSuffix(location.Path, "/") + "/" + strings.TrimPrefix(p.path, "/")
	location.RawQuery = req.URL.RawQuery
	if m := p.moderated; m != nil {
		m.watch(p.stream)
		if protocol := channelProtocol(req); protocol != "" {
			p.serveModeratedWebSocket(req, location, protocol)
			return
		}
		if protocol := spdyProtocol(req); protocol != "" {
			p.serveModeratedSPDY(req, location, protocol)
			return
		}
		// Any other protocol waits before its answer, which says nothing
		// until the stream starts or is refused.
		if err := m.await(p.ctx, nil); err != nil {
			p.refused = err
			if cause := sessionEnd(p.ctx); cause != nil {
				p.refused = statusFor(cause, t)
			}
			responder.Error(p.refused)
			return
		}
	}
	if !httpstream.IsUpgradeRequest(req) {
		forward(p.cw, req.WithContext(p.ctx), location, t.Transport, errorResponder{responder, t}, p.longRunning)
		return
	}
	h := utilproxy.NewUpgradeAwareHandler(&location, boundTo(p.ctx, t.Transport), false, false, errorResponder{responder, t})
	h.UseLocationHost = true
	h.RejectForwardingRedirects = true
	h.ServeHTTP(p.cw, req.WithContext(p.ctx))
}

// refuseUpgradeBody refuses an upgrade request that has a body, WebSocket or
// SPDY, recorded or not: the target hijacks the connection with the body
// still unread and reads it as the stream's first frames, which the
// recording, which follows the hijacked connection, would never see. No
// Kubernetes client sends one.
func refuseUpgradeBody(req *http.Request, t Target) error {
	if !httpstream.IsUpgradeRequest(req) || (req.ContentLength == 0 && len(req.TransferEncoding) == 0) {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("session %s/%s: an upgrade request must not have a body (Content-Length or Transfer-Encoding): the target would read it as the stream",
		t.Namespace, t.Name))
}

// sessionEnded reacts to the end of the session while the request runs: an
// upgraded stream no longer heeds the request context, so its client
// connection is closed, which ends both sides; a streamed response gets a
// write deadline, so that a client that stopped reading cannot hold the
// handler. Ordinary requests are not armed with it: their forward runs in
// the session's context, which its end cancels, and the request timeout
// bounds them on the aggregated path.
func (p *proxiedRequest) sessionEnded(w http.ResponseWriter) {
	if sessionEnd(p.ctx) == nil {
		return
	}
	p.cw.closeHijacked(nil)
	p.endMu.Lock()
	defer p.endMu.Unlock()
	// The response writer is the server's once the handler returned.
	if !p.returned && !p.cw.hijacked.Load() && p.longRunning {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(endWriteTimeout))
	}
}

// finish runs as the handler returns, also when it panics: a stream cut off
// by the session's end is not an abort but ends cleanly, a watch with a
// final event saying why; any other panic goes on.
func (p *proxiedRequest) finish(req *http.Request) {
	t := p.target
	cause := sessionEnd(p.ctx)
	countClosed(cause)
	observeDuration(t.Way, req, p.longRunning, p.tracker.clock.Since(p.start))
	// A client that went away aborts the handler (http.ErrAbortHandler),
	// which the server must see to reset the stream; the request is
	// still logged first.
	if v := recover(); v != nil && (v != any(http.ErrAbortHandler) || cause == nil) {
		defer panic(v)
	}
	reason := "client or target closed"
	if cause != nil {
		reason = cause.Error()
		if p.watch {
			p.cw.finishWatch(cause, t)
		}
	}
	if failed := p.recordingFailed.Load(); failed != nil {
		reason = (*failed).Error()
	}
	if p.stream != nil {
		p.stream.Close()
	}
	status := p.cw.status()
	if p.refused != nil {
		reason, status = p.refused.Error(), statusOf(p.refused)
	}
	p.logRequest(req, status, reason)
	// A stream is logged as it closes at any verbosity, as it was when it
	// opened, and so is every request of a replica that keeps no request
	// log. With one (logRequest), which holds every request, the line of
	// an ordinary request, about a fiftieth of its processor time, is
	// logged from -v=4 on, and so is that of a stream the session's end
	// cut, which the tracker logged with the others of its session.
	if (!p.longRunning || cutBySession(p.ctx)) && p.tracker.recorder != nil && !klog.V(4).Enabled() {
		return
	}
	klog.InfoS("Proxied request closed", "session", klog.KRef(t.Namespace, t.Name), "owner", logString(t.Owner), "reason", logString(t.Reason),
		"way", logString(t.Way), "verb", logString(req.Method), "path", logString(p.path), "upgrade", logString(req.Header.Get("Upgrade")),
		"longRunning", logBool(p.longRunning),
		"bytesIn", logInt(p.body.n.Load()+p.cw.hijackedIn.Load()), "bytesOut", logInt(p.cw.written.Load()+p.cw.hijackedOut.Load()),
		"duration", logDuration(p.tracker.clock.Since(p.start).Round(time.Millisecond)), "closeReason", logString(reason))
}

// close disarms the reaction to the session's end (waiting for one that
// already runs) and gives the request's place back.
func (p *proxiedRequest) close() {
	if p.disarm != nil {
		p.disarm()
	}
	p.endMu.Lock()
	p.returned = true
	p.endMu.Unlock()
	openRequests.Dec()
	p.release()
}

// sessionEnd is why the session ended a connection's context, or nil when
// something else did: the client went away, the request timed out, or the
// handler returned.
func sessionEnd(ctx context.Context) error {
	cause := context.Cause(ctx)
	for _, end := range []error{ErrExpired, ErrIdle, ErrDeleted, ErrNotReady, ErrLocked, ErrStopping, ErrModeratorLeft, ErrEndedByModerator} {
		if errors.Is(cause, end) {
			return cause
		}
	}
	return nil
}

// statusFor turns a refusal of the tracker into a Status error.
func statusFor(err error, t Target) error {
	var refusal *accessRefusal
	switch {
	case errors.As(err, &refusal):
		return refusal.StatusError
	case errors.Is(err, ErrTooManyForSession), errors.Is(err, ErrTooManyForOwner):
		return apierrors.NewTooManyRequests(err.Error(), 1)
	case errors.Is(err, ErrExpired), errors.Is(err, ErrIdle):
		//nolint:staticcheck // SA1019: reason Gone, which clients and tests check; NewResourceExpired says Expired.
		return apierrors.NewGone(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, err))
	case errors.Is(err, ErrDeleted):
		return apierrors.NewNotFound(schema.GroupResource{Group: "clustergate.dev", Resource: "sessions"}, t.Name)
	case errors.Is(err, ErrLocked):
		return apierrors.NewForbidden(schema.GroupResource{Group: "clustergate.dev", Resource: "sessions/proxy"}, t.Name,
			fmt.Errorf("session %s/%s is %w", t.Namespace, t.Name, err))
	case errors.Is(err, errUnmoderatable), errors.Is(err, ErrModeratorLeft), errors.Is(err, ErrEndedByModerator):
		return apierrors.NewForbidden(sessionProxy, t.Name, fmt.Errorf("session %s/%s is moderated: %w", t.Namespace, t.Name, err))
	case errors.Is(err, errUnrecordable):
		return apierrors.NewForbidden(schema.GroupResource{Group: "clustergate.dev", Resource: "sessions/proxy"}, t.Name,
			fmt.Errorf("session %s/%s: %w", t.Namespace, t.Name, err))
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: %v", t.Namespace, t.Name, err))
}

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
