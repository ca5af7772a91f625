// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// Flags of the load rows.
var (
	loadClients = flag.Int("load-clients", 50, "concurrent clients of the load rows")
	loadFor     = flag.Duration("load", 20*time.Second, "how long each path of the load rows runs (0: skip)")
	profileDir  = flag.String("profile", "", "write the CPU profiles of clustergate's load runs on the data plane and the whole path, and of the floor API server's, into this directory")
	envFlag     = flag.String("clustergate-env", "", "environment variables of clustergate-apiserver, separated by spaces, to measure a setting of the Go runtime (e.g. GOGC=100)")
	argsFlag    = flag.String("clustergate-args", "", "further flags of clustergate-apiserver, separated by spaces, to measure a setting (e.g. --recording=off)")
)

// clustergateEnv is what -clustergate-env adds to clustergate's environment.
func clustergateEnv() []string { return strings.Fields(*envFlag) }

// loadTarget is what the data plane must reach under load, as a share of
// the direct connection's requests per second.
const loadTarget = 0.8

// loadResult is what one path served under load.
type loadResult struct {
	requests, errors int64
	elapsed          time.Duration
	// cpu is the server's processor time meanwhile: clustergate's or a
	// floor's.
	cpu time.Duration
}

func (l loadResult) perSecond() float64 { return float64(l.requests) / l.elapsed.Seconds() }

// loadFlagRows are the flags' loadRows, none with -load=0.
func loadFlagRows(ctx context.Context, cp *localcluster.ControlPlane, paths []path) ([]row, []loadResult, error) {
	if *loadFor <= 0 {
		return nil, nil, nil
	}
	return loadRows(ctx, cp, paths, *loadClients, *loadFor, *profileDir)
}

// loadRows runs clients concurrent clients of small GETs for d on the
// direct connection, the data plane and the whole aggregated path, one path
// after the other, and reports requests per second, errors, the ratio to
// direct, and clustergate's processor time per proxied request, read from
// its /proc stat before and after each path (on the direct one, what it
// spends meanwhile without proxying); with floors, the floor's paths too,
// each with its floor server's processor time. It returns the results by
// path, too. With profileDir set, clustergate's CPU profiles of the data
// plane's and the whole path's runs are written there.
func loadRows(ctx context.Context, cp *localcluster.ControlPlane, paths []path, clients int, d time.Duration, profileDir string) ([]row, []loadResult, error) {
	results := make([]loadResult, len(paths))
	order := []int{targetDirect, dataPlane, whole}
	if len(paths) > floorProxy {
		order = []int{targetDirect, floorProxy, dataPlane, floorAggregated, whole}
	}
	for _, p := range order {
		var profile func() error
		if profileDir != "" && paths[p].profiled != "" {
			file := map[int]string{dataPlane: "clustergate-dataplane", whole: "clustergate-aggregated", floorAggregated: "floor-apiserver"}[p]
			profile = profileServer(ctx, cp, paths[p].profiled, d, filepath.Join(profileDir, file+".cpu.pprof"))
		}
		r, err := load(ctx, cp, paths[p], serverOf(p), clients, d)
		if err != nil {
			return nil, nil, err
		}
		if profile != nil {
			if err := profile(); err != nil {
				return nil, nil, err
			}
		}
		results[p] = r
	}
	direct := results[targetDirect].perSecond()
	rate := func(p int) string {
		return fmt.Sprintf("%.0f (%d errors)", results[p].perSecond(), results[p].errors)
	}
	perRequest := func(p int) string {
		if results[p].requests == 0 {
			return "-"
		}
		return (results[p].cpu / time.Duration(results[p].requests)).Round(time.Microsecond).String()
	}
	return []row{
		{name: fmt.Sprintf("load: %d clients × %s of small GETs, req/s", clients, d),
			cells: [ways]string{whole: rate(whole), dataPlane: rate(dataPlane), targetDirect: rate(targetDirect)},
			ratio: fmt.Sprintf("%.2f× / - / %.2f× of direct (target: data plane ≥ %.1f×, 0 errors)",
				results[whole].perSecond()/direct, results[dataPlane].perSecond()/direct, loadTarget)},
		{name: "load: clustergate's processor time per request (direct: its own work meanwhile, per direct request)",
			cells: [ways]string{whole: perRequest(whole), dataPlane: perRequest(dataPlane), targetDirect: perRequest(targetDirect)}},
	}, results, nil
}

// serverOf is the component that serves path p: a floor server or
// clustergate.
func serverOf(p int) string {
	switch p {
	case floorAggregated:
		return floorAPIServer
	case floorProxy:
		return floorReverse
	}
	return "clustergate"
}

// load runs clients concurrent loops of small GETs through p for d, with
// the processor time of the component server meanwhile.
func load(ctx context.Context, cp *localcluster.ControlPlane, p path, server string, clients int, d time.Duration) (loadResult, error) {
	before, err := cp.CPUTime(server)
	if err != nil {
		return loadResult{}, err
	}
	var requests, errors atomic.Int64
	var firstErr atomic.Pointer[error]
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := p.client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
					errors.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				requests.Add(1)
			}
		})
	}
	wg.Wait()
	r := loadResult{requests: requests.Load(), errors: errors.Load(), elapsed: time.Since(start)}
	after, err := cp.CPUTime(server)
	if err != nil {
		return loadResult{}, err
	}
	r.cpu = after - before
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "bench: load through %s: %d errors, the first: %v\n", p.name, r.errors, *e)
	}
	return r, nil
}

// profileServer starts taking the CPU profile for d of the generic API
// server at url, clustergate or the floor's, from its /debug/pprof as a
// member of system:masters; the function returned waits for it and writes
// it to file.
func profileServer(ctx context.Context, cp *localcluster.ControlPlane, url string, d time.Duration, file string) func() error {
	cfg := cp.FrontProxyConfig(url, "admin", "system:masters", "system:authenticated")
	// Either server's certificate names 127.0.0.1.
	cfg.ServerName = ""
	cfg.Timeout = d + time.Minute
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			client, err := rest.HTTPClientFor(cfg)
			if err != nil {
				return err
			}
			resp, err := client.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, int(d.Seconds())))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				body, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("CPU profile of %s: %s: %s", url, resp.Status, body)
			}
			out, err := os.Create(file)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, resp.Body); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}()
	}()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
