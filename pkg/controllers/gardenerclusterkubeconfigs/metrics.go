// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// ReasonSecretWriteFailed labels a failed write whose kubeconfig Gardener
// issued but whose Secret could not be written.
const ReasonSecretWriteFailed = "SecretWriteFailed"

// The controller's events, counted by the replica that leads: a write or a
// failed write happens once, on the leader. What the objects are like now is
// the Collector's, on every replica.
var (
	writes = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "kubeconfig", Name: "writes_total",
		Help:           "Kubeconfigs written to Secrets, by reason (Created, Rotated, ForcedRotation, Repaired, Adopted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	writeFailures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "kubeconfig", Name: "write_failures_total",
		Help: "Kubeconfig writes that failed, by reason: Gardener issued none (ShootNotFound, ProjectNotFound, Forbidden, ShootNotReady, " +
			"GardenerUnavailable) or the Secret could not be written (SecretWriteFailed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
)

func init() {
	legacyregistry.MustRegister(writes, writeFailures)
	// Every series exists from the start at zero, so that increase() counts
	// the first write or failure of each reason too.
	for _, r := range []string{v1alpha1.KubeconfigReasonCreated, v1alpha1.KubeconfigReasonRotated, v1alpha1.KubeconfigReasonForced, v1alpha1.KubeconfigReasonRepaired, v1alpha1.KubeconfigReasonAdopted} {
		writes.WithLabelValues(r)
	}
	for _, r := range []gardener.Reason{gardener.ShootNotFound, gardener.ProjectNotFound, gardener.Forbidden, gardener.ShootNotReady, gardener.GardenerUnavailable, ReasonSecretWriteFailed} {
		writeFailures.WithLabelValues(string(r))
	}
}
