// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// BenchmarkUpgradedStream measures the throughput of an upgraded stream,
// an exec over WebSocket (v5.channel.k8s.io) whose backend echoes every
// frame, through the proxy handler, through the proxy handler recording it
// (--recording=best-effort, local store), and, in the same run, straight to
// the same TLS backend. Compare the MB/s of the three. The cpu-ns/B metric
// is the process's CPU time per byte streamed (client and backend
// included): the difference between two runs is what the proxy, or the
// recording, itself spends, from which test/bench/proxy computes MiB/s per
// core.
func BenchmarkUpgradedStream(b *testing.B) {
	// The audit records would interleave with the benchmark's lines.
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	u, tr := echoBackend(b)
	tgt := target(u, tr)
	local, err := store.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	recorded := NewTracker(clock.RealClock{}, Limits{})
	recorded.RecordWith(recording.New(recording.Config{Store: local, Mode: recording.ModeBestEffort}))
	const exec = "/api/v1/namespaces/default/pods/p/exec?command=cat&stdin=true&stdout=true"
	for _, tt := range []struct {
		name    string
		tracker *Tracker
	}{
		{"direct", nil},
		{"proxy", NewTracker(clock.RealClock{}, Limits{})},
		{"recorded", recorded},
	} {
		b.Run(tt.name, func(b *testing.B) {
			dial, path := func() (net.Conn, error) { return tls.Dial("tcp", u.Host, tr.TLSClientConfig) }, "/prefix"+exec
			if tt.tracker != nil {
				// Clients reach the proxy over TLS, as the aggregator reaches clustergate.
				front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					tt.tracker.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
				}))
				defer front.Close()
				frontTLS := front.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
				frontTLS.NextProtos = []string{"http/1.1"}
				frontURL, _ := url.Parse(front.URL)
				dial, path = func() (net.Conn, error) { return tls.Dial("tcp", frontURL.Host, frontTLS) }, "/proxy"+exec
			}
			conn, err := dial()
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := upgrade(b, conn, path)
			chunk := stdoutFrame(256 << 10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			cpu := processCPU(b)
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
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*len(chunk)), "cpu-ns/B")
			if tt.tracker == recorded {
				b.ReportMetric(finishRecordings(b, conn, local, b.N*len(chunk)), "finish-cpu-ns/B")
			}
		})
	}
	// The recordings kept up: none failed.
	reader := recording.Reader{Store: local}
	var streams []v1alpha1.SessionRecording
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if streams, err = reader.Streams(context.Background(), "sre", "fix"); err != nil {
			b.Fatal(err)
		}
		finished := 0
		for _, s := range streams {
			if s.Manifest != nil {
				finished++
			}
		}
		if len(streams) > 0 && finished == len(streams) {
			break
		}
	}
	for _, s := range streams {
		if s.Manifest == nil || s.Manifest.Failed != "" || s.Manifest.CaptureLength == 0 {
			b.Errorf("recording %s: %+v", s.Stream, s.Manifest)
		}
	}
}

// stdoutFrame is one masked WebSocket frame of size bytes whose message
// is terminal output on channel 1, as the client of an exec sends none but
// the echo backend returns it.
func stdoutFrame(size int) []byte {
	const header = 2 + 8 + 4
	payload := make([]byte, size-header)
	payload[0] = 1
	const text = "abcdefghijklmnopqrstuvwxyz0123456789 \r\n"
	for i := 1; i < len(payload); i++ {
		payload[i] = text[i%len(text)]
	}
	frame := []byte{0x82, 0x80 | 127}
	frame = binary.BigEndian.AppendUint64(frame, uint64(len(payload)))
	mask := []byte{7, 1, 3, 5}
	frame = append(frame, mask...)
	for i, c := range payload {
		frame = append(frame, c^mask[i%4])
	}
	return frame
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func echoBackend(tb testing.TB) (*url.URL, *http.Transport) {
	return backend(tb, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, conn)
	})
}

// upgrade sends an upgrade request on conn and returns a reader positioned
// after the 101 answer.
func upgrade(tb testing.TB, conn net.Conn, path string) *bufio.Reader {
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: backend\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n", path)
	br := bufio.NewReaderSize(conn, 1<<20)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		tb.Fatalf("upgrade answer %q %v", status, err)
	}
	for line, _ := br.ReadString('\n'); line != "\r\n" && line != ""; line, _ = br.ReadString('\n') {
	}
	return br
}

// BenchmarkResponse measures a small response (like a GET of one object)
// and a 1 MiB one (like a LIST of thousands) through the proxy handler,
// through the proxy handler logging each request (--recording=best-effort,
// local store), and straight from the same TLS backend, to separate the
// proxy's own cost, and the request log's, from the hops around it:
// compare the ns/op of proxy, recorded and direct. The proxy reaches the
// backend with a session's transport (credentials.TargetTransport), so
// that its HTTP/2 settings are measured too; cpu-ns/B is the process's CPU
// time per response byte, as in BenchmarkUpgradedStream.
func BenchmarkResponse(b *testing.B) {
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	for _, size := range []struct {
		name string
		body []byte
	}{
		{"small", []byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)},
		{"1MiB", []byte(strings.Repeat(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}},`, 1<<20/64))},
	} {
		// HTTP/2 on every side, as between the aggregator, clustergate and
		// the target.
		back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(size.body)
		}))
		back.EnableHTTP2 = true
		back.StartTLS()
		defer back.Close()
		u, _ := url.Parse(back.URL)
		tr := back.Client().Transport.(*http.Transport)
		// The proxy reaches the target as it reaches a session's.
		tgt := target(u, credentials.TargetTransport(tr.TLSClientConfig.Clone()))
		frontOf := func(r *Tracker) *httptest.Server {
			front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
			}))
			front.EnableHTTP2 = true
			front.StartTLS()
			return front
		}
		front := frontOf(NewTracker(clock.RealClock{}, Limits{}))
		defer front.Close()
		recorder, _, _ := runningRecorder(b)
		recordedTracker := NewTracker(clock.RealClock{}, Limits{})
		recordedTracker.RecordWith(recorder)
		recorded := frontOf(recordedTracker)
		defer recorded.Close()

		for _, tt := range []struct {
			name   string
			client *http.Client
			url    string
		}{
			{"direct", &http.Client{Transport: tr}, u.String() + "/object"},
			{"proxy", front.Client(), front.URL + "/proxy/object"},
			{"recorded", recorded.Client(), recorded.URL + "/proxy/object"},
		} {
			b.Run(size.name+"/"+tt.name, func(b *testing.B) {
				b.SetBytes(int64(len(size.body)))
				cpu := processCPU(b)
				for range b.N {
					resp, err := tt.client.Get(tt.url)
					if err != nil {
						b.Fatal(err)
					}
					if n, _ := io.Copy(io.Discard, resp.Body); n != int64(len(size.body)) {
						b.Fatalf("read %d bytes", n)
					}
					resp.Body.Close()
				}
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*len(size.body)), "cpu-ns/B")
			})
		}
	}
}
