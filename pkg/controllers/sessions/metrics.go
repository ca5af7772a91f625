// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// Labels of the session metrics: access_level is spec.accessLevel.group,
// which --session-access-groups bounds; target_kind is shoot or cluster. No
// label names a session or a user.
const (
	targetKindShoot   = "shoot"
	targetKindCluster = "cluster"

	endExpired = "expired"
	endRevoked = "revoked"
	endIdle    = "idle"

	// reasonPending is the reason label of a session whose Ready condition
	// the controller has not written yet.
	reasonPending = "Pending"
)

// The lifecycle's events, counted by the leader's controller when the
// action that makes them succeeds, so each happens once. Approvals, denials
// and extensions join them here (clustergate_session_approvals_total{decision},
// clustergate_session_extensions_total) once Sessions have them.
var (
	sessionsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Name: "sessions_created_total",
		Help:           "Sessions taken on by the controller, by access level and target kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"access_level", "target_kind"})
	sessionsEnded = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Name: "sessions_ended_total",
		Help:           "Sessions cleaned up and gone, by access level, target kind and reason: expired, revoked (deleted before expiry), or idle (ended unused for its idle timeout).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"access_level", "target_kind", "reason"})
	orphanedBindingsRemoved = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "session", Name: "orphaned_rolebindings_removed_total",
		Help:           "RoleBindings of scoped sessions that no longer exist removed from targets by the orphan sweep, by target kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"target_kind"})
	timeToReady = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "clustergate", Subsystem: "session", Name: "time_to_ready_seconds",
		Help:           "Time from a session's creation until it became Ready, by target kind; the count is the sessions that became Ready.",
		Buckets:        []float64{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		StabilityLevel: metrics.ALPHA,
	}, []string{"target_kind"})
)

func init() {
	legacyregistry.MustRegister(sessionsCreated, sessionsEnded, timeToReady, orphanedBindingsRemoved)
	// The access levels are the server's flags, unknown here; the
	// series by target kind exist from the start.
	for _, kind := range []string{targetKindShoot, targetKindCluster} {
		timeToReady.WithLabelValues(kind)
		orphanedBindingsRemoved.WithLabelValues(kind)
	}
}

func targetKind(s *v1alpha1.Session) string {
	if s.Spec.Target.Cluster != nil {
		return targetKindCluster
	}
	return targetKindShoot
}

// record counts what a performed action did to the session's lifecycle.
func record(o Observed, a Action) {
	s := o.Session
	level, kind := s.Spec.AccessLevel.Group, targetKind(s)
	switch a.Type {
	case RemoveFinalizer:
		// An idle session stays until its expiry so that its owner sees
		// why it ended; it is counted by how it ended, not by its delete.
		end := endRevoked
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
		switch {
		case ready != nil && ready.Reason == v1alpha1.SessionReasonIdle:
			end = endIdle
		case s.Status.ExpiresAt != nil && !s.DeletionTimestamp.Before(s.Status.ExpiresAt):
			end = endExpired
		}
		sessionsEnded.WithLabelValues(level, kind, end).Inc()
	case UpdateStatus:
		// A session is taken on with its first status: the finalizer is
		// on it from its create.
		if len(s.Status.Conditions) == 0 {
			sessionsCreated.WithLabelValues(level, kind).Inc()
		}
		if !isReady(s.Status.Conditions) && isReady(a.Conditions) {
			timeToReady.WithLabelValues(kind).Observe(o.Now.Sub(s.CreationTimestamp.Time).Seconds())
		}
	}
}

func isReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, v1alpha1.SessionConditionReady)
}

// What the sessions are like, computed at each scrape from an informer's
// cache: right on every replica and at once after a restart.
var (
	sessionsDesc = metrics.NewDesc("clustergate_sessions",
		"Sessions neither expired nor being deleted, by access level, target kind and whether they are Ready.",
		[]string{"access_level", "target_kind", "ready"}, nil, metrics.ALPHA, "")
	oldestNotReadyDesc = metrics.NewDesc("clustergate_session_oldest_not_ready_timestamp_seconds",
		"Since when the session that has been not Ready longest has been so (its Ready condition's last transition, or its creation "+
			"while it has none), in seconds since the epoch, by target kind and the condition's reason (Pending: none yet); absent while every session is Ready.",
		[]string{"target_kind", "reason"}, nil, metrics.ALPHA, "")
	// Approvers are per namespace (the approve verb is granted there), so
	// the namespace of the waiting requests is a label: bounded by the
	// requests that wait, not by the namespaces that exist.
	pendingApprovalsDesc = metrics.NewDesc("clustergate_session_pending_approvals",
		"Requests waiting for an approver, by the sessions' namespace, target kind and request (Open, Extend).",
		[]string{"session_namespace", "target_kind", "request"}, nil, metrics.ALPHA, "")
	oldestPendingApprovalDesc = metrics.NewDesc("clustergate_session_oldest_pending_approval_timestamp_seconds",
		"When the request that has waited longest for an approver was made (its requestedAt), in seconds since the epoch, "+
			"by the sessions' namespace, target kind and request (Open, Extend); absent while no request waits.",
		[]string{"session_namespace", "target_kind", "request"}, nil, metrics.ALPHA, "")
)

// Collector reports the sessions in an informer's cache.
type Collector struct {
	metrics.BaseStableCollector
	sessions listers.SessionLister
	synced   cache.InformerSynced
	clock    clock.PassiveClock
}

var _ metrics.StableCollector = &Collector{}

// NewCollector returns a collector over sessions, which reports nothing
// until synced says the cache is filled: a half-filled cache would report
// too few sessions.
func NewCollector(sessions listers.SessionLister, synced cache.InformerSynced, clk clock.PassiveClock) *Collector {
	return &Collector{sessions: sessions, synced: synced, clock: clk}
}

// DescribeWithStability sends the descriptors of the collector's metrics.
func (c *Collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- sessionsDesc
	ch <- oldestNotReadyDesc
	ch <- pendingApprovalsDesc
	ch <- oldestPendingApprovalDesc
}

// CollectWithStability sends the metrics computed from the cache now.
func (c *Collector) CollectWithStability(ch chan<- metrics.Metric) {
	if !c.synced() {
		return
	}
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	live := map[[3]string]int{}
	oldest := map[[2]string]float64{}
	pending := map[[3]string]int{}
	oldestPending := map[[3]string]float64{}
	for _, s := range sessions {
		if v1alpha1.SessionStateAt(s, now).Ended() {
			continue
		}
		kind := targetKind(s)
		if a := s.Status.PendingApproval(); a != nil {
			key := [3]string{s.Namespace, kind, string(a.Type)}
			pending[key]++
			if t, ok := oldestPending[key]; !ok || float64(a.RequestedAt.Unix()) < t {
				oldestPending[key] = float64(a.RequestedAt.Unix())
			}
		}
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
		if ready != nil && ready.Status == metav1.ConditionTrue {
			live[[3]string{s.Spec.AccessLevel.Group, kind, "true"}]++
			continue
		}
		live[[3]string{s.Spec.AccessLevel.Group, kind, "false"}]++
		since, reason := s.CreationTimestamp.Time, reasonPending
		if ready != nil {
			since, reason = ready.LastTransitionTime.Time, ready.Reason
		}
		key := [2]string{kind, reason}
		if t, ok := oldest[key]; !ok || float64(since.Unix()) < t {
			oldest[key] = float64(since.Unix())
		}
	}
	for k, n := range live {
		ch <- metrics.NewLazyConstMetric(sessionsDesc, metrics.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	for k, t := range oldest {
		ch <- metrics.NewLazyConstMetric(oldestNotReadyDesc, metrics.GaugeValue, t, k[0], k[1])
	}
	for k, n := range pending {
		ch <- metrics.NewLazyConstMetric(pendingApprovalsDesc, metrics.GaugeValue, float64(n), k[0], k[1], k[2])
		ch <- metrics.NewLazyConstMetric(oldestPendingApprovalDesc, metrics.GaugeValue, oldestPending[k], k[0], k[1], k[2])
	}
}
