// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"time"
)

// inProcess runs pkg/proxy's and pkg/dataplane's benchmarks, where client,
// proxy handler and backend share one process and TLS is on every hop:
// BenchmarkResponse gives the handler's own added latency, without the
// generic API server chain around it, BenchmarkDataPlane that of the data
// plane's listener with its JWT authenticator in front of the handler, and BenchmarkUpgradedStream the throughput of upgraded
// streams (an exec over WebSocket, unrecorded and recorded), with the CPU
// the proxy run spends beyond the direct one, and the recorded run beyond
// the unrecorded one, turned into MiB/s per core; BenchmarkLocalPut what
// the disk under the recorded run's local store takes.
func inProcess(root string) ([]row, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "BenchmarkResponse|BenchmarkUpgradedStream|BenchmarkDataPlane|BenchmarkLocalPut", "-count", "5",
		"./pkg/proxy/", "./pkg/dataplane/", "./pkg/recording/store/")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	results, err := parseBenchResults(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	var smallProxy, smallDirect, largeProxy, largeDirect, streamProxy, streamDirect, streamProxyCPU, streamDirectCPU float64
	var dataPlaneSmall, dataPlaneDirect float64
	for _, m := range []struct {
		dst        *float64
		name, unit string
	}{
		{&smallProxy, "BenchmarkResponse/small/proxy", "ns/op"}, {&smallDirect, "BenchmarkResponse/small/direct", "ns/op"},
		{&largeProxy, "BenchmarkResponse/1MiB/proxy", "MB/s"}, {&largeDirect, "BenchmarkResponse/1MiB/direct", "MB/s"},
		{&streamProxy, "BenchmarkUpgradedStream/proxy", "MB/s"}, {&streamDirect, "BenchmarkUpgradedStream/direct", "MB/s"},
		{&streamProxyCPU, "BenchmarkUpgradedStream/proxy", "cpu-ns/B"}, {&streamDirectCPU, "BenchmarkUpgradedStream/direct", "cpu-ns/B"},
		{&dataPlaneSmall, "BenchmarkDataPlane/dataplane", "ns/op"}, {&dataPlaneDirect, "BenchmarkDataPlane/direct", "ns/op"},
	} {
		if *m.dst, err = results.median(m.name, m.unit); err != nil {
			return nil, fmt.Errorf("%w in: %s", err, out)
		}
	}
	recorded, err := recordedStreamRow(results, streamProxy, streamProxyCPU, streamDirect)
	if err != nil {
		return nil, fmt.Errorf("%w in: %s", err, out)
	}
	const mib = 1 << 20
	small := func(ns float64) string { return time.Duration(ns).Round(time.Microsecond).String() }
	perCore := 1e9 / (streamProxyCPU - streamDirectCPU) / mib
	return []row{
		{name: "in process: small GET through the proxy handler alone (HTTP/2 and TLS on both sides)",
			cells: [ways]string{alone: small(smallProxy), targetDirect: small(smallDirect)}, ratio: fmt.Sprintf("+%s", small(smallProxy-smallDirect))},
		{name: "in process: small GET through the data plane's listener, JWT authenticator and proxy handler (HTTP/2 and TLS on both sides)",
			cells: [ways]string{dataPlane: small(dataPlaneSmall), targetDirect: small(dataPlaneDirect)}, ratio: fmt.Sprintf("+%s", small(dataPlaneSmall-dataPlaneDirect))},
		{name: "in process: 1 MiB response, MiB/s",
			cells: [ways]string{alone: fmt.Sprintf("%.0f", largeProxy*1e6/mib), targetDirect: fmt.Sprintf("%.0f", largeDirect*1e6/mib)}, ratio: fmt.Sprintf("%.0f%% of direct (target ≥ 90%%)", 100*largeProxy/largeDirect)},
		{name: "in process: upgraded stream (echo: each byte crosses the proxy twice), MiB/s",
			cells: [ways]string{alone: fmt.Sprintf("%.0f", streamProxy*1e6/mib), targetDirect: fmt.Sprintf("%.0f", streamDirect*1e6/mib)},
			ratio: fmt.Sprintf("proxy's own: %.0f MiB/s per core (target ≥ 600)", perCore)},
		recorded,
	}, nil
}
