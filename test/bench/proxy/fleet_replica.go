// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// metrics reads a replica's /metrics as the front proxy's admin, each
// metric summed over its labels.
func metrics(ctx context.Context, cp *localcluster.ControlPlane, r replica) (map[string]float64, error) {
	body, err := debugGet(ctx, cp, r, "/metrics")
	if err != nil {
		return nil, err
	}
	sums := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(body))
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			_, rest, _ = strings.Cut(line[i:], "} ")
			name = line[:i]
		}
		value, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sums[name] += v
		}
	}
	return sums, scanner.Err()
}

// debugGet GETs path of a replica as the front proxy's admin.
func debugGet(ctx context.Context, cp *localcluster.ControlPlane, r replica, path string) ([]byte, error) {
	httpClient, err := rest.HTTPClientFor(cp.FrontProxyConfig(r.url, "admin", "system:masters", "system:authenticated"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s of %s: %s: %s", path, r.name, resp.Status, body)
	}
	return body, nil
}

// cpuByReplica is the processor time each replica used so far; 0,
// reported, when unreadable.
func cpuByReplica(cp *localcluster.ControlPlane, replicas []replica) []time.Duration {
	var cpu []time.Duration
	for _, r := range replicas {
		t, err := cp.CPUTime(r.name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		cpu = append(cpu, t)
	}
	return cpu
}

// footprint is what a replica holds at one moment.
type footprint struct {
	rssKiB                int
	heapBytes, stackBytes float64
	goroutines            float64
}

// footprintOf is what replica r holds: its live heap after a collection
// (which its heap profile's gc=1 asks for), robust to the pages that
// streams let go and others reuse, unlike the heap in use and RSS.
func footprintOf(ctx context.Context, cp *localcluster.ControlPlane, r replica) (footprint, error) {
	if _, err := debugGet(ctx, cp, r, "/debug/pprof/heap?gc=1"); err != nil {
		return footprint{}, err
	}
	m, err := metrics(ctx, cp, r)
	if err != nil {
		return footprint{}, err
	}
	rss, err := cp.RSSKiB(r.name)
	return footprint{rssKiB: rss, heapBytes: m["go_memstats_heap_alloc_bytes"], stackBytes: m["go_memstats_stack_inuse_bytes"], goroutines: m["go_goroutines"]}, err
}

// profilesDir is where the bench saves the replicas' profiles.
func profilesDir(cp *localcluster.ControlPlane) string {
	return filepath.Join(cp.RepoRoot(), "_output", "bench-proxy", "profiles")
}

// saveProfiles saves a replica's heap profile and goroutine dump in
// profilesDir, their names marked with what it held.
func saveProfiles(ctx context.Context, cp *localcluster.ControlPlane, r replica, held string) error {
	if err := os.MkdirAll(profilesDir(cp), 0o755); err != nil {
		return err
	}
	for _, p := range []struct{ file, path string }{{"heap.pprof", "/debug/pprof/heap?gc=1"}, {"goroutine.txt", "/debug/pprof/goroutine?debug=1"}} {
		body, err := debugGet(ctx, cp, r, p.path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(profilesDir(cp), fmt.Sprintf("%s-%s-%s", r.name, held, p.file)), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
