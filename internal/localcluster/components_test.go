// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"os"
	"testing"
	"time"
)

func TestCPUTimeOf(t *testing.T) {
	tests := []struct {
		name, stat string
		want       time.Duration
		err        bool
	}{
		{name: "user and system ticks", stat: "4242 (etcd) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 12 0 1000 0 0",
			want: 1750 * time.Millisecond},
		{name: "command name with spaces and parentheses", stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0",
			want: 70 * time.Millisecond},
		{name: "no command name", stat: "7 etcd R 1", err: true},
		{name: "too few fields", stat: "7 (etcd) R 1 7", err: true},
		{name: "not a number", stat: "7 (etcd) R 1 7 7 0 -1 0 0 0 0 0 x 4 0", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cpuTimeOf(tt.stat)
			if (err != nil) != tt.err {
				t.Fatalf("error = %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("cpuTimeOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCPUTimeOfSelf reads this test's own line, as CPUTime reads a
// component's.
func TestCPUTimeOfSelf(t *testing.T) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpuTimeOf(string(stat)); err != nil {
		t.Error(err)
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
