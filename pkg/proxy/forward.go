// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/klog/v2"
)

// Response copy buffers (not those of upgraded streams). A response holds
// its buffer from its first byte to its last, so an open watch holds one
// for as long as it stays open, mostly idle: long-running responses copy
// through small buffers, ordinary ones through httputil.ReverseProxy's own
// size; both are pooled, so that a request allocates none.
var (
	responseBuffers = newBufferPool(32 << 10)
	streamBuffers   = newBufferPool(4 << 10)
)

// flushInterval is how long a response's bytes may wait to be flushed, as
// k8s.io/apimachinery's proxy handler sets it; streamed responses (no
// length, such as a watch) are flushed at every write.
const flushInterval = 200 * time.Millisecond

// forward passes a request that is not an upgrade to location with
// transport and copies the answer back to w, as k8s.io/apimachinery's
// UpgradeAwareHandler does (the target's Host, X-Forwarded-For, forwarding
// redirects refused, failures to responder), without what that handler
// builds anew for every request (its reverse proxy, error logger, copy of
// the headers and a 32 KiB buffer), and with copy buffers chosen for the
// request: long-running ones get small ones. Upgrades keep going through
// UpgradeAwareHandler, which hijacks the client connection.
func forward(w http.ResponseWriter, req *http.Request, location url.URL, transport http.RoundTripper, responder utilproxy.ErrorResponder, longRunning bool) {
	if !strings.HasSuffix(location.Path, "/") && strings.HasSuffix(req.URL.Path, "/") {
		location.Path += "/"
	}
	buffers, modify := responseBuffers, refuseRedirect
	if longRunning {
		buffers, modify = streamBuffers, endWithSession
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := location
			pr.Out.URL, pr.Out.Host = &u, location.Host
			// The caller's address as this server saw it is the only
			// forwarding header the target gets.
			if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
				pr.Out.Header.Set("X-Forwarded-For", ip)
			}
		},
		Transport:      transport,
		FlushInterval:  flushInterval,
		BufferPool:     buffers,
		ModifyResponse: modify,
		ErrorHandler:   responder.Error,
		ErrorLog:       reverseProxyLog,
	}
	rp.ServeHTTP(w, req)
}

// refuseRedirect replaces a redirect of the target by a 502: following it
// would take the session's credentials elsewhere.
func refuseRedirect(resp *http.Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.Header.Get("Location") == "" {
		return nil
	}
	_ = resp.Body.Close()
	const msg = "the backend attempted to redirect this request, which is not permitted"
	*resp = http.Response{
		StatusCode:    http.StatusBadGateway,
		Status:        fmt.Sprintf("%d %s", http.StatusBadGateway, http.StatusText(http.StatusBadGateway)),
		Body:          io.NopCloser(strings.NewReader(msg)),
		ContentLength: int64(len(msg)),
	}
	return nil
}

// endWithSession refuses a redirect, as refuseRedirect does, and ends the
// response body of a long-running request, such as a watch, as complete
// when the session ends it. The read of a body the session's end cut off
// fails, and ReverseProxy would abort the handler with a panic, which
// finish recovers anyway, as such a stream ends cleanly with its final
// event: thousands of streams cut at once would each unwind a panic and
// run finish on top of the deep stack of the copy, growing the stack that
// the runtime shrank while the stream was idle.
func endWithSession(resp *http.Response) error {
	if err := refuseRedirect(resp); err != nil {
		return err
	}
	resp.Body = &sessionBody{ReadCloser: resp.Body, ctx: resp.Request.Context()}
	return nil
}

// sessionBody is the body of a long-running response, whose end reads as
// io.EOF once the session ended its request.
type sessionBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *sessionBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && sessionEnd(b.ctx) != nil {
		err = io.EOF
	}
	return n, err
}

// reverseProxyLog takes httputil.ReverseProxy's messages into the log at
// level 2: a copy cut short by the client or the session's end is routine.
var reverseProxyLog = log.New(logWriter{}, "", 0)

type logWriter struct{}

func (logWriter) Write(p []byte) (int, error) {
	klog.V(2).InfoS("Reverse proxy", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// bufferPool is an httputil.BufferPool of buffers of one size.
type bufferPool struct {
	size int
	pool sync.Pool
}

func newBufferPool(size int) *bufferPool { return &bufferPool{size: size} }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, b.size)
}

func (b *bufferPool) Put(buf []byte) { b.pool.Put(&buf) }
