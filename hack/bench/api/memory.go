package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

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
}

func newMemory(cp *localcluster.ControlPlane) *memory { return &memory{cp: cp} }

// sample records the memory now; a failed reading is printed and recorded
// as zero, so that a run still prints its table.
func (m *memory) sample(when string) {
	s := memorySample{when: when}
	var err error
	if s.rssKiB, err = m.cp.RSSKiB("clustergate"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: RSS:", err)
	}
	if s.anonKiB, err = m.cp.AnonymousRSSKiB("clustergate"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: RSS:", err)
	}
	if s.heapInUse, err = m.heapInUse(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench: heap:", err)
	}
	m.samples = append(m.samples, s)
	fmt.Printf("clustergate %s: RSS %d MiB (anonymous %d MiB), Go heap in use %d MiB\n", when, s.rssKiB/1024, s.anonKiB/1024, s.heapInUse>>20)
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

func (m *memory) heapInUse(ctx context.Context) (int64, error) {
	body, err := m.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	lines := bufio.NewScanner(body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		if f := strings.Fields(lines.Text()); len(f) == 2 && f[0] == "go_memstats_heap_inuse_bytes" {
			v, err := strconv.ParseFloat(f[1], 64)
			return int64(v), err
		}
	}
	return 0, fmt.Errorf("/metrics has no go_memstats_heap_inuse_bytes")
}

// heapProfile saves clustergate's heap profile to path.
func (m *memory) heapProfile(ctx context.Context, path string) error {
	return m.profile(ctx, "/debug/pprof/heap", path)
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
	defer f.Close()
	_, err = io.Copy(f, body)
	return err
}
