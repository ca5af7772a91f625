// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// balancer stands in for kube-proxy in front of clustergate's replicas: the
// Service of the APIService points at it, and it hands each new TCP
// connection to the next replica in turn, skipping replicas that do not
// answer. Like kube-proxy it balances connections, not requests: the
// aggregator multiplexes ordinary requests over one HTTP/2 connection, and
// dials a connection of its own for each upgraded request.
type balancer struct {
	ln net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	conns    map[net.Conn]struct{}
}

// newBalancer listens on address, host:port.
func newBalancer(address string) (*balancer, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	b := &balancer{ln: ln, conns: map[net.Conn]struct{}{}}
	go b.serve()
	return b, nil
}

// port is where the balancer listens.
func (b *balancer) port() int { return b.ln.Addr().(*net.TCPAddr).Port }

// add puts a replica, host:port, behind the balancer, once.
func (b *balancer) add(backend string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.backends, backend) {
		b.backends = append(b.backends, backend)
	}
}

// remove takes a replica, host:port, from behind the balancer, as
// kube-proxy stops routing to a pod that terminates: skipping a replica
// that does not answer would hand its turns to the next one and skew the
// rotation.
func (b *balancer) remove(backend string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = slices.DeleteFunc(b.backends, func(s string) bool { return s == backend })
}

// close stops listening and cuts every connection.
func (b *balancer) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
}

func (b *balancer) serve() {
	for {
		client, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.relay(client)
	}
}

// relay pipes client to the next replica that answers until either side
// closes.
func (b *balancer) relay(client net.Conn) {
	defer client.Close()
	backend := b.dial()
	if backend == nil {
		return
	}
	defer backend.Close()
	if !b.track(client, backend) {
		return
	}
	defer b.untrack(client, backend)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, backend); done <- struct{}{} }()
	<-done
}

func (b *balancer) dial() net.Conn {
	b.mu.Lock()
	backends, first := append([]string(nil), b.backends...), b.next
	b.next++
	b.mu.Unlock()
	for i := range backends {
		if c, err := net.DialTimeout("tcp", backends[(first+i)%len(backends)], 2*time.Second); err == nil {
			return c
		}
	}
	return nil
}

// track remembers open connections for close; it refuses once closed.
func (b *balancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		return false
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

func (b *balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns, c)
	}
}
