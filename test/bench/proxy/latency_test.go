// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"
	"time"
)

func TestSmallGetRows(t *testing.T) {
	ms := time.Millisecond
	rows := smallGetRows([]time.Duration{5 * ms, 4 * ms, 3100 * time.Microsecond, 3 * ms}, []time.Duration{20 * ms, 15 * ms, 11 * ms, 10 * ms})
	for i, want := range []string{
		"+2ms / +1ms / +100µs (target: data plane ≤ +150µs)",
		"+10ms / +5ms / +1ms (data plane +10%; target ≤ +10%)",
	} {
		if rows[i].ratio != want {
			t.Errorf("row %q: %q, want %q", rows[i].name, rows[i].ratio, want)
		}
	}
}
