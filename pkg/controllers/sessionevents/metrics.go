// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// The delivery's metrics, on the leader (stored_total also on every
// replica that stores its recordings' failures): sink is a sink's name from the
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
	// failuresDropped is on every replica: each stores the failures of
	// its own recordings.
	failuresDropped = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_events", Name: "recording_failures_dropped_total",
		Help:           "Failed recordings of this replica whose recording_failed event was not stored: more than 1000 waited for the outbox.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(eventsStored, eventsDelivered, eventsFailed, eventsDropped, eventsPending, oldestPending, failuresDropped)
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

// forgetGauges removes the gauges of a sink no longer configured.
func forgetGauges(sink string) {
	eventsPending.DeleteLabelValues(sink)
	oldestPending.DeleteLabelValues(sink)
}

// resetGauges removes the gauges of a replica that stops delivering.
func resetGauges() {
	eventsPending.Reset()
	oldestPending.Reset()
}
