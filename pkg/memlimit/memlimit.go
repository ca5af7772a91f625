// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package memlimit sets how much memory the Go runtime lets the server's
// heap take: a soft limit derived from the container's, so that the garbage
// collector works harder as the server nears the limit instead of letting
// the heap double into an OOM kill (a LIST of 10,000 objects allocates
// several times its answer), and a collection target below Go's default.
package memlimit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory limit the Go runtime may use
// before the garbage collector works harder; the rest is left to what the
// runtime does not count (the binary's pages, the OS's stacks, etcd's mmap
// when embedded).
const Ratio = 0.9

// unlimited is above any real limit: cgroup v1 reports "no limit" as a
// page-rounded 2^63-1.
const unlimited = int64(1) << 60

// cgroupLimit reads the memory limit of the cgroup mounted at root, v2 or
// v1; zero means none.
func cgroupLimit(root string) (int64, error) {
	for _, file := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0, nil
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, err
		}
		if limit >= unlimited {
			return 0, nil
		}
		return limit, nil
	}
	return 0, nil
}

// Limit is the soft memory limit for a container limit: ratio of it, the
// rest left to what the runtime does not count (stacks of the OS, etcd's
// mmap when embedded, fragmentation).
func Limit(containerLimit int64, ratio float64) int64 {
	return int64(float64(containerLimit) * ratio)
}

// SetFromCgroup sets the runtime's soft memory limit to ratio of the
// container's memory limit, unless GOMEMLIMIT is set or there is no limit.
// It returns the limit set, or zero.
func SetFromCgroup(ratio float64) (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := cgroupLimit("/sys/fs/cgroup")
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := Limit(limit, ratio)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// GCPercent is the collection target the server runs with unless GOGC says
// otherwise: collect when the heap has grown by half of what the last
// collection kept, instead of Go's default of doubling it. Most of the
// server's heap is caches that live as long as it does (the watch cache of
// every object and its recent versions, the controllers' informers), so
// doubling it doubles the server's memory for little. What 50 costs and
// saves, and why not lower, is measured in docs/operations.md ("Memory",
// make bench-api).
const GCPercent = 50

// SetGCPercent sets the collection target to percent, unless GOGC is set.
// It tells whether it did.
func SetGCPercent(percent int) bool {
	if os.Getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}
