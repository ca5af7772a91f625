// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package memlimit sets how much memory the Go runtime lets the server's
// heap take: a soft limit derived from the container's, so that the garbage
// collector works harder as the server nears the limit instead of letting
// the heap double into an OOM kill (a LIST allocates several times its
// answer), and a collection target below Go's default.
// Reading the container's limit (cgroup v1 or v2, the lowest limit up the
// process's hierarchy) and following it is automemlimit's.
package memlimit

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// Ratio is the share of the container's memory limit the Go runtime may use
// before the garbage collector works harder; the rest is left to what the
// runtime does not count (the binary's pages, the OS's stacks, etcd's mmap
// when embedded).
const Ratio = 0.9

// refreshInterval is how often the container's limit is read again, so that
// an in-place resize of the pod moves the soft limit within seconds: a
// lowered limit that the heap still counts on is an OOM kill waiting for
// the next burst. A read is a few small files of /proc and the cgroup.
const refreshInterval = 15 * time.Second

// Limit is the soft memory limit for a container limit, as SetFromCgroup
// sets it: ratio of it. Where no cgroup enforces the limit (the local
// control plane, the benchmarks), callers pass it as GOMEMLIMIT.
func Limit(containerLimit int64, ratio float64) int64 {
	return int64(float64(containerLimit) * ratio)
}

// SetFromCgroup sets the runtime's soft memory limit to ratio of the memory
// limit of the process's cgroup, and follows that limit from then on. It
// leaves the limit alone when the environment sets it: GOMEMLIMIT, or
// AUTOMEMLIMIT=off (AUTOMEMLIMIT=0.8 replaces ratio). It returns the limit
// set, or zero when the environment sets it or the process has no limit.
// After an error the limit is read again at the next refresh.
func SetFromCgroup(ratio float64) (int64, error) {
	// Followed for as long as the process lives.
	return set(context.Background(), memlimit.FromCgroup, ratio, refreshInterval)
}

// set is SetFromCgroup with the container's limit read from provider, and
// again every refresh until ctx ends (never for a zero refresh).
func set(ctx context.Context, provider memlimit.Provider, ratio float64, refresh time.Duration) (int64, error) {
	before := debug.SetMemoryLimit(-1)
	limit, err := memlimit.Set(
		memlimit.WithProvider(unlimitedOutsideCgroups(provider)),
		memlimit.WithRatio(ratio),
		memlimit.WithRefreshInterval(ctx, refresh),
		// Changes after an in-place resize and failed reads are logged
		// with the server's own log.
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(klog.Background()))),
	)
	// Set answers the limit in force: the one it set, or the one it left
	// because the environment sets it, or none (math.MaxInt64).
	if err != nil || limit == before || limit == math.MaxInt64 {
		return 0, err
	}
	return limit, nil
}

// unlimitedOutsideCgroups makes a process outside any memory cgroup, on a
// system without cgroups (a developer's machine), or in a container that
// does not mount its cgroup, one without a limit rather than one whose
// limit cannot be read, which would be logged at every refresh. The last
// is logged once.
func unlimitedOutsideCgroups(provider memlimit.Provider) memlimit.Provider {
	var once sync.Once
	return func() (uint64, error) {
		limit, err := provider()
		switch {
		case errors.Is(err, memlimit.ErrNoCgroup) || errors.Is(err, memlimit.ErrCgroupsNotSupported):
			return 0, memlimit.ErrNoLimit
		case notMounted(err):
			once.Do(func() {
				klog.InfoS("The memory cgroup is not mounted in this container: no container memory limit is followed", "err", err)
			})
			return 0, memlimit.ErrNoLimit
		}
		return limit, err
	}
}

// notMounted tells whether err says the process is in a memory cgroup
// whose files it cannot see: a container without /sys/fs/cgroup, such as
// the pods of the process node of make test-install. automemlimit has no
// sentinel error for it; its messages end so for cgroup v1 and v2 alike.
func notMounted(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "memory mount found")
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
