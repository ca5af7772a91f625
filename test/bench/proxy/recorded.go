// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import "fmt"

// recordedTarget is what a recorded stream must keep of the throughput of
// the same stream unrecorded.
const recordedTarget = 0.90

// recordedStreamRow is the row of BenchmarkUpgradedStream/recorded: its
// throughput against the unrecorded stream's (proxy) and the target, the
// recording's own CPU while the stream runs (capturing, checking, hashing
// and writing its chunks) and after it ended (the manifest), in MiB/s per
// core, and the ceiling the disk sets: the echo stores every byte twice,
// once each way.
func recordedStreamRow(results benchResults, proxyMBs, proxyCPU, directMBs float64) (row, error) {
	var mbs, cpu, finish, disk float64
	for _, m := range []struct {
		dst        *float64
		name, unit string
	}{
		{&mbs, "BenchmarkUpgradedStream/recorded", "MB/s"}, {&cpu, "BenchmarkUpgradedStream/recorded", "cpu-ns/B"},
		{&finish, "BenchmarkUpgradedStream/recorded", "finish-cpu-ns/B"}, {&disk, "BenchmarkLocalPut", "MB/s"},
	} {
		var err error
		if *m.dst, err = results.median(m.name, m.unit); err != nil {
			return row{}, err
		}
	}
	const mib = 1 << 20
	ratio := mbs / proxyMBs
	verdict := "met"
	if ratio < recordedTarget {
		verdict = "NOT met"
	}
	return row{name: "in process: the same exec stream recorded (--recording=best-effort, local store), MiB/s",
		cells: [ways]string{alone: fmt.Sprintf("%.0f", mbs*1e6/mib), targetDirect: fmt.Sprintf("%.0f", directMBs*1e6/mib)},
		ratio: fmt.Sprintf("%.0f%% of unrecorded (target ≥ %.0f%%: %s); recording's own: %.0f MiB/s per core while streaming, %.0f MiB/s per core after it ends; the store's disk takes %.0f MiB/s, so at most %.0f for a stream stored both ways",
			100*ratio, 100*recordedTarget, verdict, 1e9/(cpu-proxyCPU)/mib, 1e9/finish/mib, disk*1e6/mib, disk*1e6/mib/2)}, nil
}
