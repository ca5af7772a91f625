// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// benchResults are the results of `go test -bench` by benchmark name, without
// the GOMAXPROCS suffix, and unit: every value reported in each run, in the
// order of the runs.
type benchResults map[string]map[string][]float64

// parseBenchResults reads `go test -bench` output in the Go benchmark format:
// a result line is "Benchmark<name>[-<GOMAXPROCS>] <iterations>" followed by
// value-unit pairs ("689264 ns/op 380.32 MB/s 4.837 cpu-ns/B"). Values are
// found by their unit, never by their position, so that a new metric or an
// -benchmem run reads the same. Other lines (goos, PASS, logs, a
// benchmark's name printed alone before its log) are skipped; a result line
// whose pairs do not parse is an error.
func parseBenchResults(r io.Reader) (benchResults, error) {
	results := benchResults{}
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		line := scanner.Text()
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result: no iteration count
		}
		pairs := f[2:]
		if len(pairs) == 0 || len(pairs)%2 != 0 {
			return nil, fmt.Errorf("benchmark line without value-unit pairs: %q", line)
		}
		name := benchName(f[0])
		if results[name] == nil {
			results[name] = map[string][]float64{}
		}
		for i := 0; i < len(pairs); i += 2 {
			v, err := strconv.ParseFloat(pairs[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: value %q: %w", line, pairs[i], err)
			}
			results[name][pairs[i+1]] = append(results[name][pairs[i+1]], v)
		}
	}
	return results, scanner.Err()
}

// benchName drops the "-<GOMAXPROCS>" suffix that go test adds to a
// benchmark's name when GOMAXPROCS is not 1; a name's own dashes stay.
func benchName(s string) string {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return s
	}
	if _, err := strconv.Atoi(s[i+1:]); err != nil {
		return s
	}
	return s[:i]
}

// median is the median of the values of benchmark name in unit.
func (r benchResults) median(name, unit string) (float64, error) {
	v := slices.Clone(r[name][unit])
	if len(v) == 0 {
		return 0, fmt.Errorf("no %s of %s", unit, name)
	}
	slices.Sort(v)
	return v[len(v)/2], nil
}
