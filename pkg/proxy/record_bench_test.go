// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// finishRecordings ends a recorded stream of BenchmarkUpgradedStream,
// untimed, and waits until every recording in s has its manifest: a
// recording builds its asciicast for the manifest after its stream ended,
// which must not count in the next run. It returns the CPU that took per
// byte of the stream.
func finishRecordings(b *testing.B, conn net.Conn, s store.Store, streamed int) float64 {
	b.StopTimer()
	cpu := processCPU(b)
	_ = conn.Close()
	reader := recording.Reader{Store: s}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		streams, err := reader.Streams(context.Background(), "sre", "fix")
		if err != nil {
			b.Fatal(err)
		}
		finished := 0
		for _, s := range streams {
			if s.Manifest != nil {
				finished++
			}
		}
		if finished == len(streams) {
			return float64(processCPU(b)-cpu) / float64(streamed)
		}
	}
	b.Fatal("the recordings did not finish within a minute")
	return 0
}
