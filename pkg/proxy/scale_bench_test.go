// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// idleWatches is how many watches BenchmarkIdleWatches holds open.
const idleWatches = 2000

// BenchmarkIdleWatches holds idleWatches idle watches open through the
// proxy handler, HTTP/2 and TLS on both sides as on the data plane, then
// ends their session and waits until every client saw its final event.
// It reports the Go heap and goroutine stacks per open watch, client and
// backend included, and how long after the end the median and the last
// stream closed, with the processor time the end took. In the same run
// the watches go straight to the backend (direct) and through the floor,
// a bare httputil.ReverseProxy with the same transport whose cut cancels
// the requests' contexts, as test/bench/floor's: the proxy's run minus
// the floor's is what the proxy's own work costs per watch.
func BenchmarkIdleWatches(b *testing.B) {
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	back := idleWatchBackend(b)
	u, _ := url.Parse(back.URL)
	tr := back.Client().Transport.(*http.Transport)
	for _, way := range []string{"direct", "floor", "proxy"} {
		b.Run(way, func(b *testing.B) {
			for range b.N {
				r := NewTracker(clock.RealClock{}, Limits{})
				tgt := target(u, tr)
				base, client := u.String(), &http.Client{Transport: tr}
				handler, cut := http.Handler(nil), func() {}
				switch way {
				case "floor":
					handler, cut = floorProxy(u, tr)
				case "proxy":
					handler, cut = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
						r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
					}), func() { r.End(tgt.UID, ErrExpired) }
				}
				if handler != nil {
					front := httptest.NewUnstartedServer(handler)
					front.EnableHTTP2 = true
					front.StartTLS()
					defer front.Close()
					base, client = front.URL+"/proxy", front.Client()
				}
				heap, stacks := goMemory()
				ended := make(chan time.Time, idleWatches)
				openWatches(b, client, base, idleWatches, ended)
				heapOpen, stacksOpen := goMemory()
				b.ReportMetric(float64(heapOpen-heap)/idleWatches, "heap-B/watch")
				b.ReportMetric(float64(stacksOpen-stacks)/idleWatches, "stack-B/watch")
				if handler == nil {
					back.CloseClientConnections()
					for range idleWatches {
						<-ended
					}
					continue
				}
				cpu := processCPU(b)
				start := time.Now()
				cut()
				var took []time.Duration
				for range idleWatches {
					took = append(took, (<-ended).Sub(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "ms-p50-closed")
				b.ReportMetric(float64(took[len(took)-1].Microseconds())/1e3, "ms-last-closed")
				b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/idleWatches, "cpu-µs/closed")
			}
		})
	}
}

// floorProxy is the cheapest proxy to the backend at u: a bare
// httputil.ReverseProxy with transport tr, and the cut that ends every
// request it relays by cancelling its context.
func floorProxy(u *url.URL, tr http.RoundTripper) (http.Handler, func()) {
	var mu sync.Mutex
	var cancels []context.CancelFunc
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/proxy")
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx, cancel := context.WithCancel(req.Context())
			mu.Lock()
			cancels = append(cancels, cancel)
			mu.Unlock()
			rp.ServeHTTP(w, req.WithContext(ctx))
		}), func() {
			mu.Lock()
			defer mu.Unlock()
			for _, cancel := range cancels {
				cancel()
			}
		}
}

// goMemory is the Go heap and goroutine stacks in use, after a collection.
func goMemory() (heap, stacks uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}
