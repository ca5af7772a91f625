// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"sync"
)

// bodyBufferSize is how much of a response that is not a stream is
// gathered before it goes on to the client. A target compressing a large
// response writes it a few hundred bytes at a time, and kube-apiserver's
// HTTP/2 writer sends that as 4 KiB frames: passed on one by one, each costs
// the proxy a frame, a TLS record and a system call on the client's leg.
const bodyBufferSize = 32 << 10

var bodyBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bodyBufferSize) }}

// bufferBody makes c gather the response body until it ends or fills the
// buffer; flushes in between are left out. Only for responses the client
// reads whole: a watch or a stream goes on as it comes.
func (c *connWriter) bufferBody() {
	b := bodyBuffers.Get().(*bufio.Writer)
	b.Reset(c.ResponseWriter)
	c.body = b
}

// flushBody passes on what the buffer holds and gives the buffer back; the
// response writes directly from then on.
func (c *connWriter) flushBody() {
	b := c.body
	if b == nil {
		return
	}
	c.body = nil
	_ = b.Flush()
	b.Reset(nil)
	bodyBuffers.Put(b)
}
