// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// followSample is an output the benchmark's stream writes: its number
// between # and ;, so that a follower tells when it got it.
var followSample = regexp.MustCompile(`#(\d+);`)

// delayWriter takes what a follower writes and notes, for each sample,
// how long after it was handed to the recorder it arrived.
type delayWriter struct {
	mu     sync.Mutex
	sentAt map[int]time.Time
	delays []time.Duration
}

func (d *delayWriter) Write(b []byte) (int, error) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range followSample.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		if at, ok := d.sentAt[n]; ok {
			d.delays = append(d.delays, now.Sub(at))
			delete(d.sentAt, n)
		}
	}
	return len(b), nil
}

// BenchmarkFollow measures following a live stream recorded with the
// default flush interval to a local store under TMPDIR, in one run: the
// delay from a byte handed to the recorder to it written by a follower
// (p50 and p99, ms), and what the process spends (CPU per second of the
// stream, and the heap's high-water mark) with 0, 1 and 100 followers of
// the stream, one after the other. What followers cost is what the
// process spends above the run without any, per follower: CPU per
// follower-second and heap per follower, reported with the p99 delay as
// ratios of 100 followers to the single follower measured in the same
// run. The stream writes a line of terminal output every 50 ms for 20 s.
// Run it once:
//
//	go test -run '^$' -bench BenchmarkFollow -benchtime=1x ./pkg/recording/
func BenchmarkFollow(b *testing.B) {
	for range b.N {
		var runs [3]followCost
		for i, followers := range []int{0, 1, 100} {
			runs[i] = benchmarkFollow(b, followers, 20*time.Second, 50*time.Millisecond)
			b.Logf("followers=%d: CPU %.2f ms/s, heap %.2f MiB above the start, delay p50 %.0f ms p99 %.0f ms (%d samples)",
				followers, runs[i].cpuPerSecond, runs[i].heapMiB, runs[i].p50, runs[i].p99, runs[i].samples)
		}
		none, one, hundred := runs[0], runs[1], runs[2]
		cpuOne, cpuHundred := one.cpuPerSecond-none.cpuPerSecond, (hundred.cpuPerSecond-none.cpuPerSecond)/100
		heapOne, heapHundred := one.heapMiB-none.heapMiB, (hundred.heapMiB-none.heapMiB)/100
		b.ReportMetric(cpuOne*1000, "cpu-us/follower-s@1")
		b.ReportMetric(cpuHundred*1000, "cpu-us/follower-s@100")
		b.ReportMetric(heapOne*1024, "heap-KiB/follower@1")
		b.ReportMetric(heapHundred*1024, "heap-KiB/follower@100")
		b.ReportMetric(cpuHundred/cpuOne, "cpu/follower-ratio")
		b.ReportMetric(heapHundred/heapOne, "heap/follower-ratio")
		b.ReportMetric(hundred.p99/one.p99, "p99-ratio")
	}
}

// followCost is what one run of benchmarkFollow measured.
type followCost struct {
	// cpuPerSecond is the process's CPU per second of the stream (ms/s);
	// heapMiB the heap's high-water mark above the start.
	cpuPerSecond, heapMiB float64
	// p50 and p99 are the delays to the first follower (ms), of samples.
	p50, p99 float64
	samples  int
}

func benchmarkFollow(b *testing.B, followers int, duration, every time.Duration) followCost {
	local := newLocalStore(b)
	rec := New(Config{Store: local, Mode: ModeBestEffort, Replica: "r1", Keys: testKeys, Clock: clock.RealClock{}})
	s, err := rec.OpenStream(context.Background(), v1alpha1.RecordingInfo{RecordedSession: testSession, Subresource: "exec", TTY: true})
	if err != nil {
		b.Fatal(err)
	}
	s.ToClient([]byte(wsResponse))
	reader := Reader{Store: local, Keys: testKeys}
	for {
		if _, err := local.Get(context.Background(), s.prefix+liveObject); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	measured := &delayWriter{sentAt: map[int]time.Time{}}
	var wg sync.WaitGroup
	for i := range followers {
		cast, err := reader.OpenCast(context.Background(), "sre", "fix", s.ID(), false)
		if err != nil {
			b.Fatal(err)
		}
		w := io.Writer(io.Discard)
		if i == 0 {
			w = measured
		}
		wg.Go(func() {
			if err := reader.Follow(context.Background(), cast, w, func() {}); err != nil {
				b.Error(err)
			}
		})
	}
	cpu := processCPU(b)
	start := time.Now()
	var peak uint64
	line := "drwxr-xr-x 2 root root 4096 Dec  1 22:40 bin\r\n"
	for n := 0; time.Since(start) < duration; n++ {
		measured.mu.Lock()
		measured.sentAt[n] = time.Now()
		measured.mu.Unlock()
		s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, fmt.Sprintf("#%d;%s", n, line))))
		if n%10 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
		time.Sleep(every)
	}
	elapsed := time.Since(start)
	used := processCPU(b) - cpu
	s.Close()
	s.Wait()
	wg.Wait()
	cost := followCost{cpuPerSecond: float64(used.Microseconds()) / 1000 / elapsed.Seconds(), heapMiB: float64(peak-min(peak, base.HeapInuse)) / (1 << 20)}
	if followers > 0 {
		slices.Sort(measured.delays)
		if len(measured.delays) == 0 {
			b.Fatal("no sample reached the follower")
		}
		at := func(q float64) float64 {
			return float64(measured.delays[int(q*float64(len(measured.delays)-1))].Milliseconds())
		}
		cost.p50, cost.p99, cost.samples = at(0.5), at(0.99), len(measured.delays)
	}
	return cost
}
