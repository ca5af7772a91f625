// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package memlimit

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// container is the memory limit of the tests' containers: large, so that a
// soft limit a refresh leaves behind at a test's end costs the test binary
// nothing.
const container = 64 << 30

// answer is what a provider answers: a container's limit, or an error.
type answer struct {
	limit uint64
	err   error
}

// environment sets GOMEMLIMIT and AUTOMEMLIMIT as env says, unset when
// absent, and the runtime's soft limit to none, for the test's duration.
func environment(t *testing.T, env map[string]string) {
	t.Helper()
	for _, name := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(name, env[name])
		if _, ok := env[name]; !ok {
			// An empty AUTOMEMLIMIT is not an absent one.
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	previous := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(previous) })
}

func TestSet(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		answer answer
		// want is what set returns, runtime the soft limit it leaves.
		want, runtime int64
		wantErr       bool
	}{
		{name: "container with a limit", answer: answer{limit: container},
			want: Limit(container, Ratio), runtime: Limit(container, Ratio)},
		{name: "container without a limit", answer: answer{err: memlimit.ErrNoLimit}, runtime: math.MaxInt64},
		{name: "process outside any memory cgroup", answer: answer{err: memlimit.ErrNoCgroup}, runtime: math.MaxInt64},
		{name: "system without cgroups", answer: answer{err: memlimit.ErrCgroupsNotSupported}, runtime: math.MaxInt64},
		{name: "cgroup v1 not mounted in the container",
			answer: answer{err: errors.New("memory controller found in /proc/self/cgroup but no cgroup v1 memory mount found")}, runtime: math.MaxInt64},
		{name: "cgroup v2 not mounted in the container", answer: answer{err: errors.New("no usable cgroup v2 memory mount found")}, runtime: math.MaxInt64},
		{name: "limit that cannot be read", answer: answer{err: errors.New("failed to parse memory.max value")},
			runtime: math.MaxInt64, wantErr: true},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, answer: answer{limit: container}, runtime: math.MaxInt64},
		{name: "AUTOMEMLIMIT off", env: map[string]string{"AUTOMEMLIMIT": "off"}, answer: answer{limit: container}, runtime: math.MaxInt64},
		{name: "AUTOMEMLIMIT ratio", env: map[string]string{"AUTOMEMLIMIT": "0.5"}, answer: answer{limit: container},
			want: Limit(container, 0.5), runtime: Limit(container, 0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			environment(t, tt.env)
			got, err := set(t.Context(), func() (uint64, error) { return tt.answer.limit, tt.answer.err }, Ratio, 0)
			if (err != nil) != tt.wantErr {
				t.Fatalf("set error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("set = %d, want %d", got, tt.want)
			}
			if runtime := debug.SetMemoryLimit(-1); runtime != tt.runtime {
				t.Errorf("runtime's soft limit = %d, want %d", runtime, tt.runtime)
			}
		})
	}
}

// TestSetFollowsResizes resizes the container in place, one row after the
// other: the runtime's soft limit follows each within a few refreshes.
func TestSetFollowsResizes(t *testing.T) {
	environment(t, nil)
	var current atomic.Pointer[answer]
	current.Store(&answer{limit: container})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := set(ctx, func() (uint64, error) { a := current.Load(); return a.limit, a.err }, Ratio, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	resizes := []struct {
		name    string
		answer  answer
		runtime int64
	}{
		{name: "lowered", answer: answer{limit: container / 2}, runtime: Limit(container/2, Ratio)},
		{name: "a read that fails keeps the limit", answer: answer{err: errors.New("failed to read memory.max")}, runtime: Limit(container/2, Ratio)},
		{name: "raised", answer: answer{limit: 2 * container}, runtime: Limit(2*container, Ratio)},
		{name: "removed", answer: answer{err: memlimit.ErrNoLimit}, runtime: math.MaxInt64},
	}
	for _, r := range resizes {
		current.Store(&r.answer)
		deadline := time.Now().Add(10 * time.Second)
		for debug.SetMemoryLimit(-1) != r.runtime && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		// Some refreshes later, it still holds.
		time.Sleep(20 * time.Millisecond)
		if got := debug.SetMemoryLimit(-1); got != r.runtime {
			t.Errorf("%s: runtime's soft limit = %d, want %d", r.name, got, r.runtime)
		}
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		container int64
		ratio     float64
		want      int64
	}{
		{container: 1 << 30, ratio: Ratio, want: 966367641},
		{container: 512 << 20, ratio: 0.5, want: 256 << 20},
	}
	for _, tt := range tests {
		if got := Limit(tt.container, tt.ratio); got != tt.want {
			t.Errorf("Limit(%d, %v) = %d, want %d", tt.container, tt.ratio, got, tt.want)
		}
	}
}

func TestSetGCPercent(t *testing.T) {
	tests := []struct {
		name, gogc string
		want       int
		set        bool
	}{
		{name: "GOGC unset", want: 50, set: true},
		{name: "GOGC set", gogc: "100", want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.gogc)
			previous := debug.SetGCPercent(100)
			defer debug.SetGCPercent(previous)
			if set := SetGCPercent(50); set != tt.set {
				t.Errorf("SetGCPercent = %v, want %v", set, tt.set)
			}
			if got := debug.SetGCPercent(100); got != tt.want {
				t.Errorf("collection target = %d, want %d", got, tt.want)
			}
		})
	}
}
