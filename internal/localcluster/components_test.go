// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"testing"
	"time"
)

func TestRunTimeOf(t *testing.T) {
	tests := []struct {
		name, schedstat string
		want            time.Duration
		err             bool
	}{
		{name: "run, wait and runs", schedstat: "3035220 417387 2\n", want: 3035220 * time.Nanosecond},
		{name: "empty", schedstat: "", err: true},
		{name: "not a number", schedstat: "x 1 2", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runTimeOf(tt.schedstat)
			if (err != nil) != tt.err {
				t.Fatalf("error = %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("runTimeOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCPUTime reads a busy component's processor time twice: it grows by
// about what the component spent between the two, at better than the 10 ms
// of /proc/<pid>/stat.
func TestCPUTime(t *testing.T) {
	cp := &ControlPlane{logs: t.TempDir()}
	defer cp.Stop()
	// A shell loop that only counts, on one thread.
	if err := cp.launch("busy", "/bin/sh", nil, "-c", "i=0; while :; do i=$((i+1)); done"); err != nil {
		t.Fatal(err)
	}
	before, err := cp.CPUTime("busy")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	after, err := cp.CPUTime("busy")
	if err != nil {
		t.Fatal(err)
	}
	// It ran for at most the 300 ms, and on a loaded machine at least a
	// little of them.
	if used := after - before; used <= 0 || used > 400*time.Millisecond {
		t.Errorf("CPU time grew by %v in 300 ms of a busy loop", used)
	}
	if after%(10*time.Millisecond) == 0 {
		t.Errorf("CPU time %v is a multiple of 10 ms: read in ticks", after)
	}
}

// TestLaunchReplacesStoppedComponent starts a component under a name a
// stopped one had: StopComponent must then stop the new process, as when
// two tests in turn start and stop the S3 server.
func TestLaunchReplacesStoppedComponent(t *testing.T) {
	cp := &ControlPlane{logs: t.TempDir()}
	defer cp.Stop()
	if err := cp.launch("s3", "/bin/sleep", nil, "60"); err != nil {
		t.Fatal(err)
	}
	if err := cp.launch("s3", "/bin/sleep", nil, "60"); err == nil {
		t.Error("a second s3 started while the first runs")
	}
	if err := cp.StopComponent("s3"); err != nil {
		t.Fatal(err)
	}
	if err := cp.launch("s3", "/bin/sleep", nil, "60"); err != nil {
		t.Fatal(err)
	}
	if len(cp.procs) != 1 {
		t.Fatalf("%d processes tracked, want the one running", len(cp.procs))
	}
	second := cp.procs[0]
	if err := cp.StopComponent("s3"); err != nil {
		t.Fatal(err)
	}
	if done, _ := second.exited(); !done {
		t.Error("StopComponent left the s3 started last running")
	}
}
