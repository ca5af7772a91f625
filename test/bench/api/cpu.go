// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// kubectlName is the column of the processor time of the bench's finished
// child processes: the kubectl commands, the only children that end while
// the control plane runs.
const kubectlName = "kubectl"

// cpuUse adds up, per kind of object created, the processor time each
// process used while those objects were created: where a create's cost goes.
type cpuUse struct {
	cp    *localcluster.ControlPlane
	names []string
	used  map[string]map[string]time.Duration // kind → process → time
}

func newCPUUse(cp *localcluster.ControlPlane) *cpuUse {
	return &cpuUse{cp: cp, names: append(cp.Components(), kubectlName), used: map[string]map[string]time.Duration{}}
}

// now reads every process's processor time so far; a failed reading counts
// as zero and is printed.
func (c *cpuUse) now() map[string]time.Duration {
	t := map[string]time.Duration{}
	for _, name := range c.names {
		if name == kubectlName {
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
				fmt.Fprintln(os.Stderr, "bench: rusage:", err)
			}
			t[name] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			continue
		}
		d, err := c.cp.CPUTime(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: CPU time:", err)
		}
		t[name] = d
	}
	return t
}

// add counts what each process used since before towards kind.
func (c *cpuUse) add(kind string, before map[string]time.Duration) {
	after := c.now()
	if c.used[kind] == nil {
		c.used[kind] = map[string]time.Duration{}
	}
	for name, t := range after {
		c.used[kind][name] += t - before[name]
	}
}

// printIdle writes the share of a processor each process used between two
// readings d apart, while nothing was asked of the servers: what the
// objects cost while nobody uses them.
func (c *cpuUse) printIdle(before, after map[string]time.Duration, d time.Duration) {
	fmt.Printf("\n| processor use while idle, %s (%% of one core) | |\n|---|---|\n", d.Round(time.Second))
	var all time.Duration
	for _, name := range c.names {
		used := after[name] - before[name]
		all += used
		if name != kubectlName {
			fmt.Printf("| %s | %.1f |\n", name, 100*used.Seconds()/d.Seconds())
		}
	}
	fmt.Printf("| all | **%.1f** |\n", 100*all.Seconds()/d.Seconds())
}

// perObject is the processor time, in milliseconds, process used per object
// while n objects of kind were created.
func (c *cpuUse) perObject(kind, process string, n int) float64 {
	return float64(c.used[kind][process].Microseconds()) / 1000 / float64(n)
}

// print writes a table of processor time per created object, by process,
// for each kind: the processes that used less than 0.05 ms per object for
// every kind are left out.
func (c *cpuUse) print(n int) {
	kinds := slices.Sorted(maps.Keys(c.used))
	fmt.Printf("\n| processor time per created object (ms) | %s |\n|---|%s\n", strings.Join(kinds, " | "), strings.Repeat("---|", len(kinds)))
	totals := make([]float64, len(kinds))
	for _, name := range c.names {
		row, shown := make([]string, len(kinds)), false
		for i, k := range kinds {
			ms := c.perObject(k, name, n)
			totals[i] += ms
			row[i] = fmt.Sprintf("%.2f", ms)
			shown = shown || ms >= 0.05
		}
		if shown {
			fmt.Printf("| %s | %s |\n", name, strings.Join(row, " | "))
		}
	}
	row := make([]string, len(kinds))
	for i, t := range totals {
		row[i] = fmt.Sprintf("**%.2f**", t)
	}
	fmt.Printf("| all | %s |\n", strings.Join(row, " | "))
}
