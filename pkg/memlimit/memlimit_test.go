// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestCgroupLimit(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  int64
		err   bool
	}{
		{name: "cgroup v2 with a limit", files: map[string]string{"memory.max": "1073741824\n"}, want: 1 << 30},
		{name: "cgroup v2 without a limit", files: map[string]string{"memory.max": "max\n"}},
		{name: "cgroup v1 with a limit", files: map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, want: 512 << 20},
		{name: "cgroup v1 without a limit", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		{name: "no cgroup", files: map[string]string{}},
		{name: "unreadable value", files: map[string]string{"memory.max": "lots\n"}, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cgroupLimit(root)
			if (err != nil) != tc.err {
				t.Fatalf("error = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("limit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	if got := Limit(1<<30, 0.9); got != 966367641 {
		t.Errorf("Limit(1 GiB, 0.9) = %d, want 966367641", got)
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
