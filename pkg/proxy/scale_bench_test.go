// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
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
// backend included (compare with the direct run: the difference is the
// proxy's), and how long after the end the median and the last stream
// closed, with the processor time the end took.
func BenchmarkIdleWatches(b *testing.B) {
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	back := idleWatchBackend(b)
	u, _ := url.Parse(back.URL)
	tr := back.Client().Transport.(*http.Transport)
	for _, proxied := range []bool{false, true} {
		name := "direct"
		if proxied {
			name = "proxy"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				r := NewTracker(clock.RealClock{}, Limits{})
				tgt := target(u, tr)
				base, client := u.String(), &http.Client{Transport: tr}
				if proxied {
					front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
						r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
					}))
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
				if !proxied {
					back.CloseClientConnections()
					for range idleWatches {
						<-ended
					}
					continue
				}
				cpu := processCPU(b)
				start := time.Now()
				r.End(tgt.UID, ErrExpired)
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

// goMemory is the Go heap and goroutine stacks in use, after a collection.
func goMemory() (heap, stacks uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}
