// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

// growStack grows the calling goroutine's stack at once to what a proxied
// request needs. The HTTP/2 server runs every request in a fresh goroutine
// with a small stack, which grew by copying deep in the request's call
// chain (the session's lookup, the forward to the target), where a copy
// costs most: every frame of the stack is walked and adjusted. Grown here, a
// few frames deep, once, it does not grow again. Only for requests that are
// not long-running: a watch's goroutine would hold the grown stack for as
// long as it stays open.
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
