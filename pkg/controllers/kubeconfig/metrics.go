package kubeconfig

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	rotations = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "kubeconfig", Name: "writes_total",
		Help:           "Kubeconfigs written to Secrets, by reason (Created, Rotated, ForcedRotation, Repaired, Adopted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	failures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "kubeconfig", Name: "failures_total",
		Help:           "Failed kubeconfig requests to Gardener, by reason (ShootNotFound, Forbidden, ShootNotReady, GardenerUnavailable).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	secondsUntilExpiry = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "kubeconfig", Name: "seconds_until_expiry",
		Help:           "Seconds from the last write of an object's kubeconfig until it expires.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "name"})
)

func init() {
	legacyregistry.MustRegister(rotations, failures, secondsUntilExpiry)
}
