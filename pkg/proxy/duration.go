// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/streaming/pkg/httpstream"
)

// Way is how a proxied request came in, the value of the way label.
type Way string

// The ways in.
const (
	// WayAggregated: sessions/proxy, through the control plane's
	// kube-apiserver.
	WayAggregated Way = "aggregated"
	// WayDataPlane: the data plane's listener, authenticated by a JWT.
	WayDataPlane Way = "data_plane"
)

// Verb classes, the values of the verb_class label: they separate requests
// whose duration is latency from streams whose duration is their life.
const (
	// verbClassRead: GET, HEAD and OPTIONS that answer at once.
	verbClassRead = "read"
	// verbClassWrite: POST, PUT, PATCH and DELETE.
	verbClassWrite = "write"
	// verbClassWatch: streamed answers, lasting until their client, their
	// target or their session ends them: watches, followed logs, the
	// target's own proxy subresources.
	verbClassWatch = "watch"
	// verbClassStream: upgraded connections: exec, attach, port-forward,
	// WebSockets.
	verbClassStream = "stream"
)

var requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
	Namespace: "clustergate", Subsystem: "proxy", Name: "request_duration_seconds",
	Help: "Duration of proxied requests this replica let through, from their arrival until the answer or stream ended (failures to reach the target included), " +
		"by verb class (read, write: latency; watch, stream: how long streams lasted) and way in (aggregated, data_plane).",
	// Latency below 10 s, stream lives up to the longest session.
	Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400},
	StabilityLevel: metrics.ALPHA,
}, []string{"verb_class", "way"})

// durationSeries are requestDuration's series, looked up once: every
// proxied request observes one, and the vector's own lookup hashes the
// label values and takes a lock.
var durationSeries = map[durationLabels]metrics.ObserverMetric{}

type durationLabels struct {
	class string
	way   Way
}

func init() {
	legacyregistry.MustRegister(requestDuration)
	for _, class := range []string{verbClassRead, verbClassWrite, verbClassWatch, verbClassStream} {
		for _, way := range []Way{WayAggregated, WayDataPlane} {
			durationSeries[durationLabels{class, way}] = requestDuration.WithLabelValues(class, string(way))
		}
	}
}

// verbClass classifies a proxied request, long-running as LongRunning
// decided it when the request came in.
func verbClass(req *http.Request, longRunning bool) string {
	switch {
	case httpstream.IsUpgradeRequest(req):
		return verbClassStream
	case longRunning:
		return verbClassWatch
	case req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodOptions:
		return verbClassRead
	}
	return verbClassWrite
}

// observeDuration records a proxied request that came in by way and took d.
func observeDuration(way Way, req *http.Request, longRunning bool, d time.Duration) {
	class := verbClass(req, longRunning)
	series, ok := durationSeries[durationLabels{class, way}]
	if !ok {
		series = requestDuration.WithLabelValues(class, string(way))
	}
	series.Observe(d.Seconds())
}
