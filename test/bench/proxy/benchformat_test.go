// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBenchResults(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		want    benchResults
		wantErr string
	}{
		{
			name: "values by unit, runs appended, GOMAXPROCS suffix dropped, other lines skipped",
			output: `goos: linux
goarch: amd64
pkg: github.com/clustergate/clustergate/pkg/proxy
cpu: some CPU @ 2.00GHz
BenchmarkUpgradedStream/proxy-2         	    3000	    689264 ns/op	 380.32 MB/s	         4.837 cpu-ns/B
BenchmarkUpgradedStream/proxy-2         	    3100	    650000 ns/op	 400.00 MB/s	         4.5 cpu-ns/B
BenchmarkResponse/small/direct-2        	   10000	    112345 ns/op
PASS
ok  	github.com/clustergate/clustergate/pkg/proxy	12.345s
`,
			want: benchResults{
				"BenchmarkUpgradedStream/proxy":  {"ns/op": {689264, 650000}, "MB/s": {380.32, 400}, "cpu-ns/B": {4.837, 4.5}},
				"BenchmarkResponse/small/direct": {"ns/op": {112345}},
			},
		},
		{
			name:   "units in another order and -benchmem columns read the same",
			output: "BenchmarkResponse/1MiB/proxy-8 100 12.5 MB/s 4096 B/op 31 allocs/op 80000000 ns/op\n",
			want: benchResults{"BenchmarkResponse/1MiB/proxy": {
				"MB/s": {12.5}, "B/op": {4096}, "allocs/op": {31}, "ns/op": {80000000},
			}},
		},
		{
			name:   "GOMAXPROCS=1 adds no suffix; a name's own dashes stay",
			output: "BenchmarkResponse/1MiB/proxy 100 80000000 ns/op\nBenchmarkUpgradedStream/half-duplex-4 10 5 ns/op\n",
			want: benchResults{
				"BenchmarkResponse/1MiB/proxy":        {"ns/op": {80000000}},
				"BenchmarkUpgradedStream/half-duplex": {"ns/op": {5}},
			},
		},
		{
			name: "a name printed alone before its log, and log lines, are no results",
			output: `BenchmarkResponse/small/proxy
    bench_test.go:42: warming up
BenchmarkResponse/small/proxy-2 500 2000 ns/op
`,
			want: benchResults{"BenchmarkResponse/small/proxy": {"ns/op": {2000}}},
		},
		{
			name:    "a result line with an odd pair is an error",
			output:  "BenchmarkResponse/small/proxy-2 500 2000 ns/op 17\n",
			wantErr: "without value-unit pairs",
		},
		{
			name:    "a result line with an unreadable value is an error",
			output:  "BenchmarkResponse/small/proxy-2 500 fast ns/op\n",
			wantErr: `value "fast"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBenchResults(strings.NewReader(tt.output))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBenchResultsMedian(t *testing.T) {
	results := benchResults{"BenchmarkX": {"ns/op": {5, 1, 4, 2, 3}, "MB/s": {10, 30}}}
	tests := []struct {
		name, bench, unit string
		want              float64
		wantErr           bool
	}{
		{name: "odd count: the middle value", bench: "BenchmarkX", unit: "ns/op", want: 3},
		{name: "even count: the upper middle value", bench: "BenchmarkX", unit: "MB/s", want: 30},
		{name: "unknown unit", bench: "BenchmarkX", unit: "B/op", wantErr: true},
		{name: "unknown benchmark", bench: "BenchmarkY", unit: "ns/op", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := results.median(tt.bench, tt.unit)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("median = %v, want %v", got, tt.want)
			}
		})
	}
	if diff := cmp.Diff([]float64{5, 1, 4, 2, 3}, results["BenchmarkX"]["ns/op"]); diff != "" {
		t.Errorf("median reordered the results (-want +got):\n%s", diff)
	}
}
