// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"net/http"
	"strings"
)

// growStack grows the calling goroutine's stack at once to what a proxied
// request needs. The HTTP/2 server runs every request in a fresh goroutine
// with a small stack, which grew by copying deep in the request's call
// chain (the session's lookup, the forward to the target), where a copy
// costs most: every frame of the stack is walked and adjusted. Grown here, a
// few frames deep, once, it does not grow again.
//
//go:noinline
func growStack() {
	var frame [8 << 10]byte
	keepFrame(frame[:])
}

// keepFrame makes growStack's frame real.
//
//go:noinline
func keepFrame([]byte) {}

// mayStream tells requests that may stay open for long, a watch, a followed
// log or an upgraded stream, whose goroutine would hold a stack grown for
// the request's peak for as long as it stays open, from those answered at
// once, without parsing the request (as proxy.LongRunning does).
func mayStream(req *http.Request) bool {
	q := req.URL.RawQuery
	return req.Header.Get("Upgrade") != "" || strings.Contains(q, "watch") || strings.Contains(q, "follow") ||
		strings.Contains(req.URL.Path, "/watch/")
}
