// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// The delivery's metrics, on the leader: sink is a sink's name from the
// configuration, type an event type; neither grows with the fleet.
var (
	eventsStored = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "stored_total",
		Help:           "Session events stored in the outbox, by type.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type"})
	eventsDelivered = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "delivered_total",
		Help:           "Session events a sink acknowledged, by sink.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sink"})
	eventsFailed = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "failed_total",
		Help:           "Failed attempts to deliver a session event, by sink; each is tried again after a backoff.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sink"})
	eventsDropped = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "dropped_total",
		Help:           "Session events dropped undelivered because more than maxPending waited, by sink.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sink"})
	eventsPending = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "pending",
		Help:           "Session events waiting for a sink, by sink, as the leader's last pass saw them.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sink"})
	oldestPending = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "oldest_pending_timestamp_seconds",
		Help:           "When (Unix seconds) the oldest session event waiting for a sink happened, by sink; absent while none waits.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sink"})
)

func init() {
	legacyregistry.MustRegister(eventsStored, eventsDelivered, eventsFailed, eventsDropped, eventsPending, oldestPending)
	for _, t := range sessionevents.Types {
		eventsStored.WithLabelValues(string(t))
	}
}

// initMetrics starts a sink's counters at zero.
func initMetrics(sink string) {
	eventsDelivered.WithLabelValues(sink)
	eventsFailed.WithLabelValues(sink)
	eventsDropped.WithLabelValues(sink)
	eventsPending.WithLabelValues(sink).Set(0)
}

// setPending sets a sink's gauges to the events still waiting for it,
// oldest first.
func setPending(sink string, queue []sessionevents.Event) {
	eventsPending.WithLabelValues(sink).Set(float64(len(queue)))
	if len(queue) == 0 {
		oldestPending.DeleteLabelValues(sink)
		return
	}
	oldestPending.WithLabelValues(sink).Set(float64(queue[0].Time.Unix()))
}

// resetGauges removes the gauges of a replica that stops delivering.
func resetGauges() {
	eventsPending.Reset()
	oldestPending.Reset()
}
