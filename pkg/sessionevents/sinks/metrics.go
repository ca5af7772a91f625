// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sinks

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The reloads of the sinks' configuration, on every replica.
var (
	reloads = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session_event_sinks", Name: "config_reloads_total",
		Help:           "Reloads of --session-event-sinks-config after its files changed, by result (success, failure: the previous configuration stays).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	reloadSucceeded = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "session_event_sinks", Name: "config_last_reload_successful",
		Help:           "1 when the files of --session-event-sinks-config are in effect as they are now, 0 when their last change did not load.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(reloads, reloadSucceeded)
	reloads.WithLabelValues("success")
	reloads.WithLabelValues("failure")
}
