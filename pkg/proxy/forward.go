// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
)

// forward passes a request that is not an upgrade to location on the
// target, as k8s.io/apimachinery's UpgradeAwareHandler does (the client's
// address as X-Forwarded-For, Host set to the target's, redirects from the
// target refused), without what that handler builds anew for
// every request: its reverse proxy, error logger, copy of the headers, and
// a 32 KiB buffer for the response body, which here comes from a pool.
// Upgrades keep going through UpgradeAwareHandler, which hijacks the
// client connection.
func forward(w http.ResponseWriter, req *http.Request, location *url.URL, transport http.RoundTripper, errs errorResponder) {
	// As UpgradeAwareHandler: a trailing slash the client sent stays.
	if strings.HasSuffix(req.URL.Path, "/") && !strings.HasSuffix(location.Path, "/") {
		location.Path += "/"
	}
	(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL, r.Out.Host = location, location.Host
			// The caller's own forwarding headers were stripped (and the
			// reverse proxy drops them too): the address the target sees
			// is the one this server saw.
			if ip, _, err := net.SplitHostPort(r.In.RemoteAddr); err == nil {
				r.Out.Header.Set("X-Forwarded-For", ip)
			}
		},
		Transport:      transport,
		BufferPool:     responseBuffers,
		ErrorLog:       reverseProxyLog,
		ErrorHandler:   errs.Error,
		ModifyResponse: refuseRedirect,
	}).ServeHTTP(w, req)
}

// redirectRefused is what the client reads instead of a redirect.
const redirectRefused = "the backend attempted to redirect this request, which is not permitted"

// refuseRedirect replaces a redirect from the target with a 502: the proxy
// follows none, and the client must not follow one to wherever the target
// points, with the session's authority.
func refuseRedirect(resp *http.Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.Header.Get("Location") == "" {
		return nil
	}
	_ = resp.Body.Close()
	*resp = http.Response{
		StatusCode:    http.StatusBadGateway,
		Status:        fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)),
		Body:          io.NopCloser(strings.NewReader(redirectRefused)),
		ContentLength: int64(len(redirectRefused)),
	}
	return nil
}

// responseBufferSize is the size of the buffers that carry response bodies
// from the target to the client: the reverse proxy's own default.
const responseBufferSize = 32 << 10

// responseBuffers lends the reverse proxies their copy buffers.
var responseBuffers = &bufferPool{pool: sync.Pool{New: func() any { return make([]byte, responseBufferSize) }}}

// bufferPool is an httputil.BufferPool over a sync.Pool.
type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte { return p.pool.Get().([]byte) }

//nolint:staticcheck // SA6002: the slice header is 24 bytes; its buffer is what the pool saves.
func (p *bufferPool) Put(b []byte) { p.pool.Put(b) }

// reverseProxyLog takes the reverse proxy's own messages. Its "suppressing
// panic" lines say only that a client or target went away while a response
// was copied, which the request's closing log line says too.
var reverseProxyLog = log.New(quietCopyErrors{}, "", log.LstdFlags)

// quietCopyErrors writes to standard error what is not a suppressed panic.
type quietCopyErrors struct{}

func (quietCopyErrors) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "suppressing panic") {
		return len(p), nil
	}
	return os.Stderr.Write(p)
}
