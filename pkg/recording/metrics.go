// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	recordedStreams = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "streams_total",
		Help:           "Interactive streams whose recording started on this replica.",
		StabilityLevel: metrics.ALPHA,
	})
	failedStreams = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "failed_streams_total",
		Help:           "Interactive streams whose recording could not be started or stopped before the stream ended.",
		StabilityLevel: metrics.ALPHA,
	})
	refusedStreams = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "refused_streams_total",
		Help:           "Interactive streams refused because --recording=required and the store could not be written.",
		StabilityLevel: metrics.ALPHA,
	})
	writeFailures = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "write_failures_total",
		Help:           "Writes of recordings and request logs to the recording store that failed.",
		StabilityLevel: metrics.ALPHA,
	})
	lostRequests = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "lost_requests_total",
		Help:           "Request log entries that could not be kept (recorded by a marker entry in the log instead).",
		StabilityLevel: metrics.ALPHA,
	})
	writtenBytes = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "written_bytes_total",
		Help:           "Bytes of recordings and request logs written to the recording store.",
		StabilityLevel: metrics.ALPHA,
	})
	moderatorFollows = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "moderator_follows",
		Help:           "Follows of moderated streams through this replica by their moderators (?moderate=true) now.",
		StabilityLevel: metrics.ALPHA,
	})
	followers = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "recording", Name: "followers",
		Help:           "Live streams and request logs followed through this replica (sessions/recordings ?follow=true) now.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(recordedStreams, failedStreams, refusedStreams, writeFailures, lostRequests, writtenBytes, followers, moderatorFollows)
}
