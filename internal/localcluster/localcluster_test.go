// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort hands out distinct ports below the ephemeral range that a
// server can listen on.
func TestFreePort(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port >= 32768 || seen[port] {
			t.Fatalf("FreePort = %d (seen before: %v), want a new port below 32768", port, seen[port])
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Close()
	}
}
