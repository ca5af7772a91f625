// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// cutStreams is how many streams BenchmarkCut holds open, cutExecPercent
// of them exec streams, as test/bench/proxy holds on each replica.
const (
	cutStreams     = 2000
	cutExecPercent = 5
)

var cutProfile = flag.String("cutprofile", "", "write a CPU profile of each of BenchmarkCut's cuts, and only of them, to this path with .N added")

// BenchmarkCut holds cutStreams idle streams of one session open through
// the proxy handler as a replica serves them: watches sharing their
// clients' HTTP/2 connections, each a request on the target's shared
// connections, and exec streams over WebSocket, each on a connection of
// its own and recorded (--recording=best-effort, local store), with klog
// writing its text; then it ends the session and waits until every client
// saw its stream end and every recording is finished. It reports the
// processor time of the cut per stream, until the last client saw its end
// and until everything settled, and when the median and the last stream
// closed, with the heap objects allocated and the read and write system
// calls made per stream, which the machine's load does not change as it
// changes processor time. -cutprofile writes a processor profile of each
// cut alone, where the label side=proxy marks the proxy's goroutines.
func BenchmarkCut(b *testing.B) {
	// The server's log, formatted as a replica formats it, to nowhere.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	defer klog.LogToStderr(true)
	// Goroutines inherit their labels: the profile tells the proxy's side
	// (side=proxy) from the backends' and the clients'.
	defer pprof.SetGoroutineLabels(context.Background())
	side := func(name string) {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", name)))
	}
	side("backend")

	watchBackend := idleWatchBackend(b)
	watchURL, _ := url.Parse(watchBackend.URL)
	watchTarget := target(watchURL, watchBackend.Client().Transport.(*http.Transport))
	// The exec streams stay idle: the backend has nothing to echo.
	execTarget := target(echoBackend(b))
	execTarget.ExpiresAt = watchTarget.ExpiresAt

	const execPath = "/api/v1/namespaces/default/pods/p/exec?command=cat&stdin=true&stdout=true"
	execs := cutStreams * cutExecPercent / 100
	watches := cutStreams - execs
	for i := range b.N {
		side("proxy")
		recorder, dir, _ := runningRecorder(b)
		r := NewTracker(clock.RealClock{}, Limits{})
		r.RecordWith(recorder)
		front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			tgt := watchTarget
			if strings.HasSuffix(req.URL.Path, "/exec") {
				tgt = execTarget
			}
			r.Handler(tgt, strings.TrimPrefix(req.URL.Path, "/proxy"), &responder{}).ServeHTTP(w, req)
		}))
		front.EnableHTTP2 = true
		front.StartTLS()

		side("client")
		ended := make(chan time.Time, cutStreams)
		client := front.Client()
		openWatches(b, client, front.URL+"/proxy", watches, ended)
		frontTLS := client.Transport.(*http.Transport).TLSClientConfig.Clone()
		frontTLS.NextProtos = []string{"http/1.1"}
		for range execs {
			conn, err := tls.Dial("tcp", front.Listener.Addr().String(), frontTLS)
			if err != nil {
				b.Fatal(err)
			}
			br := upgrade(b, conn, "/proxy"+execPath)
			go func() {
				defer conn.Close()
				_, _ = io.Copy(io.Discard, br)
				ended <- time.Now()
			}()
		}
		for r.OpenConnections(watchTarget.UID) < cutStreams {
			time.Sleep(10 * time.Millisecond)
		}

		side("proxy")
		if *cutProfile != "" {
			f, err := os.Create(fmt.Sprintf("%s.%d", *cutProfile, i))
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
		}
		mallocs, syscalls := goMallocs(), ioSyscalls(b)
		cpu := processCPU(b)
		start := time.Now()
		r.End(watchTarget.UID, ErrExpired)
		var took []time.Duration
		for range cutStreams {
			took = append(took, (<-ended).Sub(start))
		}
		cpuClosed := processCPU(b)
		// Settled: the tracker let go of every request, and every
		// recording wrote its manifest.
		for r.OpenConnections(watchTarget.UID) > 0 || manifests(b, dir) < execs {
			time.Sleep(5 * time.Millisecond)
		}
		cpuSettled := processCPU(b)
		b.ReportMetric(float64(goMallocs()-mallocs)/cutStreams, "allocs/settled")
		b.ReportMetric(float64(ioSyscalls(b)-syscalls)/cutStreams, "rw-syscalls/settled")
		if *cutProfile != "" {
			pprof.StopCPUProfile()
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "ms-p50-closed")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1e3, "ms-last-closed")
		b.ReportMetric(float64((cpuClosed-cpu).Microseconds())/cutStreams, "cpu-µs/closed")
		b.ReportMetric(float64((cpuSettled-cpu).Microseconds())/cutStreams, "cpu-µs/settled")
		front.Close()
	}
}

// openWatches opens n watches with client at base, each sending the moment
// it ended to ended.
func openWatches(tb testing.TB, client *http.Client, base string, n int, ended chan<- time.Time) {
	for range n {
		resp, err := client.Get(base + "/api/v1/namespaces/default/configmaps?watch=true")
		if err != nil {
			tb.Fatal(err)
		}
		go func() {
			defer resp.Body.Close()
			lines := bufio.NewScanner(resp.Body)
			for lines.Scan() {
			}
			ended <- time.Now()
		}()
	}
}

// idleWatchBackend is an HTTP/2 TLS server that answers every request as
// a watch that stays idle until its client goes; it closes when tb ends.
func idleWatchBackend(tb testing.TB) *httptest.Server {
	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	back.EnableHTTP2 = true
	back.StartTLS()
	tb.Cleanup(back.Close)
	return back
}

// runningRecorder returns a recorder of best-effort recordings to a local
// store in a new directory, which it returns too, running until stop or
// until tb ends; stop waits until it wrote its last request log.
func runningRecorder(tb testing.TB) (recorder *recording.Recorder, dir string, stop func()) {
	dir = tb.TempDir()
	local, err := store.NewLocal(dir)
	if err != nil {
		tb.Fatal(err)
	}
	recorder = recording.New(recording.Config{Store: local, Mode: recording.ModeBestEffort})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		recorder.Run(ctx)
	}()
	stop = sync.OnceFunc(func() { cancel(); <-ran })
	tb.Cleanup(stop)
	return recorder, dir, stop
}

// goMallocs is how many heap objects this process allocated so far; unlike
// its processor time, it does not grow with the machine's load.
func goMallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// ioSyscalls is how many read and write system calls this process made so
// far (/proc/self/io).
func ioSyscalls(tb testing.TB) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(string(data), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		if name == "syscr" || name == "syscw" {
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			n += v
		}
	}
	return n
}

// manifests counts the recordings under dir that are finished.
func manifests(tb testing.TB, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "manifest.json" {
			n++
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
