package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// BenchmarkUpgradedStream measures the throughput of an upgraded stream,
// like exec or port-forward, through the proxy handler and, in the same
// run, straight to the same TLS backend. Compare the MB/s of the two.
func BenchmarkUpgradedStream(b *testing.B) {
	// The audit records would interleave with the benchmark's lines.
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	u, tr := echoBackend(b)
	r := NewRegistry(clock.RealClock{}, Limits{})
	tgt := Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice", ExpiresAt: time.Now().Add(time.Hour), Backend: u, Transport: tr}
	// Clients reach the proxy over TLS, as the aggregator reaches clustergate.
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
	}))
	defer front.Close()
	frontTLS := front.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	frontTLS.NextProtos = []string{"http/1.1"}
	frontURL, _ := url.Parse(front.URL)

	for _, tt := range []struct {
		name string
		dial func() (net.Conn, error)
		path string
	}{
		{"direct", func() (net.Conn, error) { return tls.Dial("tcp", u.Host, tr.TLSClientConfig) }, "/prefix/stream"},
		{"proxy", func() (net.Conn, error) { return tls.Dial("tcp", frontURL.Host, frontTLS) }, "/proxy/stream"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			conn, err := tt.dial()
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := upgrade(b, conn, tt.path)
			chunk := make([]byte, 256<<10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			go func() {
				for range b.N {
					if _, err := conn.Write(chunk); err != nil {
						return
					}
				}
			}()
			if _, err := io.CopyN(io.Discard, br, int64(b.N)*int64(len(chunk))); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func echoBackend(tb testing.TB) (*url.URL, *http.Transport) {
	return backend(tb, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, conn)
	})
}

// upgrade sends an upgrade request on conn and returns a reader positioned
// after the 101 answer.
func upgrade(tb testing.TB, conn net.Conn, path string) *bufio.Reader {
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: backend\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n", path)
	br := bufio.NewReaderSize(conn, 1<<20)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		tb.Fatalf("upgrade answer %q %v", status, err)
	}
	for line, _ := br.ReadString('\n'); line != "\r\n" && line != ""; line, _ = br.ReadString('\n') {
	}
	return br
}

// BenchmarkLargeResponse measures a 1 MiB response, like a LIST of
// thousands of objects, through the proxy handler and straight from the
// same TLS backend, to separate the proxy's own cost from the hops around it.
func BenchmarkLargeResponse(b *testing.B) {
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	body := []byte(strings.Repeat(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}},`, 1<<20/64))
	u, tr := backend(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	r := NewRegistry(clock.RealClock{}, Limits{})
	tgt := Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice", ExpiresAt: time.Now().Add(time.Hour), Backend: u, Transport: tr}
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
	}))
	defer front.Close()

	for _, tt := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"direct", &http.Client{Transport: tr}, u.String() + "/list"},
		{"proxy", front.Client(), front.URL + "/proxy/list"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for range b.N {
				resp, err := tt.client.Get(tt.url)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != int64(len(body)) {
					b.Fatalf("read %d bytes", n)
				}
				resp.Body.Close()
			}
		})
	}
}
