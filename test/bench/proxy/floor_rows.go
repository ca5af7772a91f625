// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// Targets of the floor table: clustergate ÷ floor at most, and what
// clustergate may add to the floor's exec stream setup.
const (
	floorTargetRequest = 1.3 // CPU per request, added p50
	floorTargetStream  = 1.1 // CPU per streamed byte, memory per idle watch
	floorTargetCut     = 1.5 // CPU per stream cut at expiry
	floorTargetExec    = 2 * time.Millisecond
)

// Sizes of the floor rows' measurements.
var (
	floorWatches = flag.Int("floor-watches", 500, "idle watches held through each path for the floor rows' memory and cut")
	floorStream  = flag.Int("floor-stream-mib", 128, "MiB streamed through an exec's cat on each path for the floor rows' CPU per streamed byte")
)

// floorPair is a clustergate path and the floor path doing the same hops.
type floorPair struct {
	name             string
	clustergate, low int
}

// floorPairs are the two ways into a session and their floors.
var floorPairs = []floorPair{{"aggregated", whole, floorAggregated}, {"data plane", dataPlane, floorProxy}}

// floorRow is a line of the floor table: a figure of clustergate and of
// its floor, their ratio and the target's verdict.
type floorRow struct {
	name, clustergate, floor, ratio, target, verdict string
}

// ratioRow is the floor row of a figure where less is better, with the
// verdict of the target limit of clustergate ÷ floor (none when 0).
func ratioRow(name string, cg, low float64, format func(float64) string, limit float64) floorRow {
	r := floorRow{name: name, clustergate: format(cg), floor: format(low), ratio: fmt.Sprintf("%.2f×", cg/low), target: "-"}
	if limit > 0 {
		r.target, r.verdict = fmt.Sprintf("≤ %.1f×", limit), verdict(cg/low <= limit)
	}
	return r
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "MISS"
}

// signed prints d with its sign, what one way adds to another.
func signed(d time.Duration) string {
	d = d.Round(10 * time.Microsecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func micros(d float64) string { return time.Duration(d).Round(time.Microsecond).String() }

// latencyFloorRows are the small GET's added p50 and p99 of each pair,
// over the direct path.
func latencyFloorRows(p50, p99 []time.Duration) []floorRow {
	var rows []floorRow
	for _, pair := range floorPairs {
		for _, q := range []struct {
			name  string
			d     []time.Duration
			limit float64
		}{{"p50", p50, floorTargetRequest}, {"p99", p99, 0}} {
			added := func(p int) float64 { return float64(q.d[p] - q.d[targetDirect]) }
			rows = append(rows, ratioRow(fmt.Sprintf("%s: small GET, added %s over direct", pair.name, q.name), added(pair.clustergate), added(pair.low), micros, q.limit))
		}
	}
	return rows
}

// loadFloorRows are the server's processor time per request of each pair
// under load.
func loadFloorRows(results []loadResult) []floorRow {
	if len(results) <= floorProxy {
		return nil
	}
	var rows []floorRow
	for _, pair := range floorPairs {
		perRequest := func(p int) float64 { return float64(results[p].cpu) / float64(max(results[p].requests, 1)) }
		rows = append(rows, ratioRow(fmt.Sprintf("%s: server's CPU per small GET under load (%d clients)", pair.name, *loadClients),
			perRequest(pair.clustergate), perRequest(pair.low), micros, floorTargetRequest))
	}
	return rows
}

// throughputFloorRows are each pair's rates, where more is better: the
// ratio shows how much of the floor's clustergate reaches.
func throughputFloorRows(name string, perSecond []float64, format func(float64) string) []floorRow {
	var rows []floorRow
	for _, pair := range floorPairs {
		r := ratioRow(pair.name+": "+name, perSecond[pair.clustergate], perSecond[pair.low], format, 0)
		r.target = "(more is better)"
		rows = append(rows, r)
	}
	return rows
}

// largeGetRates is the MiB/s of GETs of a ConfigMap of 1,000,000 bytes on
// each path, taking turns, the body read raw (no decoding on the client).
func largeGetRates(ctx context.Context, paths []path) ([]float64, error) {
	const name = "large"
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"` + strings.Repeat("v", 1000000) + `"}}`
	if err := paths[targetDirect].client.CoreV1().RESTClient().Post().Namespace(namespace).Resource("configmaps").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error(); err != nil {
		return nil, err
	}
	perSecond := rates(paths, 20, func(c kubernetes.Interface) (int, error) {
		b, err := c.CoreV1().RESTClient().Get().Namespace(namespace).Resource("configmaps").Name(name).DoRaw(ctx)
		return len(b), err
	})
	for i := range perSecond {
		perSecond[i] /= 1 << 20
	}
	return perSecond, nil
}

// execURL is the exec of `cat` in execPod through cfg.
func execURL(cfg *rest.Config) string {
	return strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/default/pods/" + execPod + "/exec?command=cat&stdin=true&stdout=true&container=main"
}

// execEcho starts `cat` in execPod through cfg over WebSocket, as kubectl
// does, and returns the time until a first byte written came back (the
// stream's setup); then it streams n more bytes through it in 32 KiB writes
// and reads them back.
func execEcho(ctx context.Context, cfg *rest.Config, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, execURL(cfg))
	if err != nil {
		return 0, err
	}
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	stdoutR, stdoutW := io.Pipe()
	start := time.Now()
	go func() {
		err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: stdoutW})
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		stdoutW.CloseWithError(err)
	}()
	one := make([]byte, 1)
	if _, err := stdinW.Write(one); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(stdoutR, one); err != nil {
		return 0, err
	}
	setup := time.Since(start)
	go func() {
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < n; sent += len(chunk) {
			if _, err := stdinW.Write(chunk[:min(len(chunk), n-sent)]); err != nil {
				return
			}
		}
	}()
	_, err = io.CopyN(io.Discard, stdoutR, int64(n))
	return setup, err
}

// execFloorRows are each pair's exec stream setup, the median of 20 taking
// turns, and the server's CPU per byte streamed through `cat` (each byte
// crosses the server twice, out and back).
func execFloorRows(ctx context.Context, cp *localcluster.ControlPlane, paths []path) ([]floorRow, error) {
	if err := standInPod(ctx, paths[targetDirect].client); err != nil {
		return nil, err
	}
	setups := make([][]time.Duration, len(paths))
	for i := range 21 {
		for j := range paths {
			p := (i + j) % len(paths)
			setup, err := execEcho(ctx, paths[p].cfg, 0)
			if err != nil {
				return nil, fmt.Errorf("exec through %s: %w", paths[p].name, err)
			}
			if i > 0 {
				setups[p] = append(setups[p], setup)
			}
		}
	}
	median := func(p int) time.Duration { slices.Sort(setups[p]); return setups[p][len(setups[p])/2] }
	n := *floorStream << 20
	var rows []floorRow
	for _, pair := range floorPairs {
		added := median(pair.clustergate) - median(pair.low)
		rows = append(rows, floorRow{name: pair.name + ": exec stream setup (WebSocket, to the first echoed byte), median",
			clustergate: median(pair.clustergate).Round(10 * time.Microsecond).String(), floor: median(pair.low).Round(10 * time.Microsecond).String(),
			ratio: signed(added), target: fmt.Sprintf("≤ +%v", floorTargetExec), verdict: verdict(added <= floorTargetExec)})
		perByte := make(map[int]float64)
		for _, p := range []int{pair.clustergate, pair.low} {
			before, err := cp.CPUTime(serverOf(p))
			if err != nil {
				return nil, err
			}
			start := time.Now()
			if _, err := execEcho(ctx, paths[p].cfg, n); err != nil {
				return nil, fmt.Errorf("streaming through %s: %w", paths[p].name, err)
			}
			elapsed := time.Since(start)
			after, err := cp.CPUTime(serverOf(p))
			if err != nil {
				return nil, err
			}
			perByte[p] = float64(after-before) / float64(n)
			fmt.Fprintf(os.Stderr, "bench: %d MiB through cat over %s in %v\n", *floorStream, paths[p].name, elapsed.Round(time.Millisecond))
		}
		rows = append(rows, ratioRow(fmt.Sprintf("%s: server's CPU per byte through an exec's cat (%d MiB each way)", pair.name, *floorStream),
			perByte[pair.clustergate], perByte[pair.low], func(ns float64) string { return fmt.Sprintf("%.2f ns", ns) }, floorTargetStream))
	}
	return rows, nil
}

// printFloorTable prints the floor table, with the machine's load.
func printFloorTable(rows []floorRow) {
	if len(rows) == 0 {
		return
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\nclustergate against the floor (test/bench/floor) in the same run; load average %s\n\n| measurement | clustergate | floor | clustergate ÷ floor | target | |\n|---|---|---|---|---|---|\n",
		strings.Join(strings.Fields(string(load))[:3], " "))
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.name, r.clustergate, r.floor, r.ratio, r.target, r.verdict)
	}
}
