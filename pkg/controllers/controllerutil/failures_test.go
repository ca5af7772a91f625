// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllerutil

import (
	"testing"
	"time"
)

func TestFailures(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		failures int
		want     time.Duration
	}{
		{name: "first failure waits base", failures: 1, want: time.Second},
		{name: "every further one doubles", failures: 3, want: 4 * time.Second},
		{name: "up to the limit", failures: 20, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFailures()
			for range tt.failures {
				f.Record("uid", "Unreachable", "connection refused", at)
			}
			got, ok := f.Get("uid")
			if !ok || got.Count != tt.failures || got.Reason != "Unreachable" {
				t.Fatalf("Get = %+v, %v; want %d failures", got, ok, tt.failures)
			}
			if retry := got.RetryAt(time.Second, time.Minute).Sub(at); retry != tt.want {
				t.Errorf("RetryAt = +%s, want +%s", retry, tt.want)
			}
			f.Forget("uid")
			if _, ok := f.Get("uid"); ok {
				t.Errorf("a forgotten failure is still there")
			}
		})
	}
}
