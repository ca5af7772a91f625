// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// memory samples clustergate's resident memory and Go heap.
type memory struct {
	cp      *localcluster.ControlPlane
	samples []memorySample
}

type memorySample struct {
	when      string
	rssKiB    int
	anonKiB   int
	heapInUse int64
	gcCycles  int64
}

func newMemory(cp *localcluster.ControlPlane) *memory { return &memory{cp: cp} }

// sample records the memory now.
func (m *memory) sample(when string) {
	m.samples = append(m.samples, m.read(when))
}

// settle waits for d, printing the memory every interval on the way, and
// records the memory at the end.
func (m *memory) settle(d, interval time.Duration, when string) {
	end := time.Now().Add(d)
	for time.Until(end) > interval {
		time.Sleep(interval)
		m.read(fmt.Sprintf("%s left of the settling", time.Until(end).Round(time.Second)))
	}
	time.Sleep(time.Until(end))
	m.sample(when)
}

// window samples the memory every interval for d and records its median
// and range: the steady state, which a single sample misses (the watch
// cache's consistency check lists everything from etcd every 5 to 7.5
// minutes, and the runtime returns freed memory minutes after a
// collection).
func (m *memory) window(d, interval time.Duration) steadyState {
	var rss, anon []int
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(interval)
		s := m.read(fmt.Sprintf("steady state, %s left", time.Until(end).Round(time.Second)))
		rss, anon = append(rss, s.rssKiB), append(anon, s.anonKiB)
	}
	slices.Sort(rss)
	slices.Sort(anon)
	return steadyState{duration: d, samples: len(rss), rss: [3]int{rss[0], rss[len(rss)/2], rss[len(rss)-1]},
		anon: [3]int{anon[0], anon[len(anon)/2], anon[len(anon)-1]}}
}

// steadyState is the minimum, median and maximum of the memory over a
// window, in KiB.
type steadyState struct {
	duration  time.Duration
	samples   int
	rss, anon [3]int
}

// read reads and prints the memory now; a failed reading is printed and
// read as zero, so that a run still prints its table.
func (m *memory) read(when string) memorySample {
	s := memorySample{when: when}
	var err error
	if s.rssKiB, err = m.cp.RSSKiB("clustergate"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: RSS:", err)
	}
	if s.anonKiB, err = m.cp.AnonymousRSSKiB("clustergate"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: RSS:", err)
	}
	if s.heapInUse, s.gcCycles, err = m.runtimeStats(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench: heap:", err)
	}
	fmt.Printf("clustergate %s: RSS %d MiB (anonymous %d MiB), Go heap in use %d MiB, %d collections so far\n",
		when, s.rssKiB/1024, s.anonKiB/1024, s.heapInUse>>20, s.gcCycles)
	return s
}

// get reads a path of clustergate itself, as the aggregator would.
func (m *memory) get(ctx context.Context, path string) (io.ReadCloser, error) {
	client, err := rest.HTTPClientFor(m.cp.FrontProxyConfig(m.cp.ClustergateURL, "admin", "system:masters"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.cp.ClustergateURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return resp.Body, nil
}

// runtimeStats reads the Go heap in use and the number of completed garbage
// collections from clustergate's /metrics.
func (m *memory) runtimeStats(ctx context.Context) (inUse, cycles int64, err error) {
	body, err := m.get(ctx, "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer body.Close()
	want := map[string]*int64{"go_memstats_heap_inuse_bytes": &inUse, "go_gc_duration_seconds_count": &cycles}
	lines := bufio.NewScanner(body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() && len(want) > 0 {
		f := strings.Fields(lines.Text())
		if len(f) != 2 || want[f[0]] == nil {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", f[0], err)
		}
		*want[f[0]] = int64(v)
		delete(want, f[0])
	}
	if len(want) > 0 {
		return 0, 0, fmt.Errorf("/metrics lacks %v", slices.Sorted(maps.Keys(want)))
	}
	return inUse, cycles, lines.Err()
}

// heapProfile saves clustergate's heap profile to path. It collects
// first: without, the profile shows the heap as of up to two collections
// ago, which after a burst of LISTs still counts their garbage as in use.
func (m *memory) heapProfile(ctx context.Context, path string) error {
	return m.profile(ctx, "/debug/pprof/heap?gc=1", path)
}

// cpuProfile profiles clustergate's CPU for the given time and saves the
// profile to path.
func (m *memory) cpuProfile(ctx context.Context, seconds int, path string) error {
	return m.profile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), path)
}

func (m *memory) profile(ctx context.Context, endpoint, path string) error {
	body, err := m.get(ctx, endpoint)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
