// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

var metricsNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func metricsAt(d time.Duration) *metav1.Time { t := metav1.NewTime(metricsNow.Add(d)); return &t }

// metricsSession is a session of level on a shoot (or, with cluster, a
// cluster) created a minute ago that expires in an hour.
func metricsSession(name, level string, cluster bool, conditions ...metav1.Condition) *v1alpha1.Session {
	s := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sre", Name: name, CreationTimestamp: *metricsAt(-time.Minute)},
		Spec:       v1alpha1.SessionSpec{AccessLevel: v1alpha1.AccessLevel{Group: level}, Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "c"}}},
		Status:     v1alpha1.SessionStatus{ExpiresAt: metricsAt(time.Hour), Conditions: conditions},
	}
	if cluster {
		s.Spec.Target = v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{}}
	}
	return s
}

// waiting is a session whose last request, of type typ, has waited for an
// approver since ago: an opening one has no expiry and waits on a shoot, an
// extension belongs to a Ready session on a cluster.
func waiting(name, ns string, typ v1alpha1.SessionApprovalType, ago time.Duration) *v1alpha1.Session {
	requested := v1alpha1.SessionApproval{Type: typ, Decision: v1alpha1.ApprovalPending, RequestedAt: *metricsAt(ago)}
	if typ == v1alpha1.ApprovalOpen {
		s := metricsSession(name, "admin", false, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonWaitingForApproval, ago))
		s.Namespace, s.Status.ExpiresAt, s.Status.Approvals = ns, nil, []v1alpha1.SessionApproval{requested}
		return s
	}
	s := metricsSession(name, "admin", true, readyCondition(metav1.ConditionTrue, "SessionReady", -time.Hour))
	s.Namespace = ns
	s.Status.Approvals = []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalApproved}, requested}
	return s
}

func readyCondition(status metav1.ConditionStatus, reason string, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: status, Reason: reason, LastTransitionTime: *metricsAt(since)}
}

func TestRecord(t *testing.T) {
	deleted := func(s *v1alpha1.Session, at time.Duration) *v1alpha1.Session {
		s.DeletionTimestamp = metricsAt(at)
		return s
	}
	ready := []metav1.Condition{readyCondition(metav1.ConditionTrue, "SessionReady", 0)}
	tests := []struct {
		name    string
		session *v1alpha1.Session
		action  Action
		// counters is the expected exposition of the two counters.
		counters string
		// readyKind is the target kind whose time to Ready is observed,
		// readySeconds the observation.
		readyKind    string
		readySeconds float64
	}{
		{name: "taken on: its first status", session: metricsSession("s", "admin", false),
			action:   Action{Type: UpdateStatus, Conditions: []metav1.Condition{readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonTargetUnreachable, 0)}},
			counters: `clustergate_sessions_created_total{access_level="admin",target_kind="shoot"} 1`},
		{name: "the finalizer added to a session stored without it: not counted twice", session: metricsSession("s", "admin", false),
			action: Action{Type: AddFinalizer}},
		{name: "deleted by its end", session: deleted(metricsSession("s", "viewer", true), time.Hour), action: Action{Type: RemoveFinalizer},
			counters: `clustergate_sessions_ended_total{access_level="viewer",reason="expired",target_kind="cluster"} 1`},
		{name: "deleted before its end", session: deleted(metricsSession("s", "viewer", false), -time.Second), action: Action{Type: RemoveFinalizer},
			counters: `clustergate_sessions_ended_total{access_level="viewer",reason="revoked",target_kind="shoot"} 1`},
		{name: "deleted at its expiry after it went idle", session: deleted(metricsSession("s", "viewer", true,
			readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonIdle, -time.Minute)), time.Hour), action: Action{Type: RemoveFinalizer},
			counters: `clustergate_sessions_ended_total{access_level="viewer",reason="idle",target_kind="cluster"} 1`},
		{name: "revoked after it went idle", session: deleted(metricsSession("s", "viewer", false,
			readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonIdle, -time.Minute)), -time.Second), action: Action{Type: RemoveFinalizer},
			counters: `clustergate_sessions_ended_total{access_level="viewer",reason="idle",target_kind="shoot"} 1`},
		{name: "becomes Ready a minute after creation", session: metricsSession("s", "admin", true, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonCSRPending, 0)),
			action: Action{Type: UpdateStatus, Conditions: ready}, readyKind: targetKindCluster, readySeconds: 60},
		{name: "a status update of a Ready session", session: metricsSession("s", "admin", false, ready...),
			action: Action{Type: UpdateStatus, Conditions: ready}},
		{name: "a status that is not Ready", session: metricsSession("s", "admin", false, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonCSRPending, 0)),
			action: Action{Type: UpdateStatus, Conditions: []metav1.Condition{readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonTargetUnreachable, 0)}}},
		{name: "other actions", session: metricsSession("s", "admin", false), action: Action{Type: CreatePrivateKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sessionsCreated.Reset()
			sessionsEnded.Reset()
			timeToReady.Reset()

			record(Observed{Session: tt.session, Now: metricsNow}, tt.action)

			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(countersHelp+tt.counters+"\n"),
				"clustergate_sessions_created_total", "clustergate_sessions_ended_total"); err != nil {
				t.Error(err)
			}
			for _, kind := range []string{targetKindShoot, targetKindCluster} {
				wantCount, wantSum := 0, 0.0
				if kind == tt.readyKind {
					wantCount, wantSum = 1, tt.readySeconds
				}
				count, _ := testutil.GetHistogramMetricCount(timeToReady.WithLabelValues(kind))
				sum, _ := testutil.GetHistogramMetricValue(timeToReady.WithLabelValues(kind))
				if int(count) != wantCount || sum != wantSum {
					t.Errorf("time to Ready of %s sessions: %d observations summing to %v, want %d summing to %v", kind, count, sum, wantCount, wantSum)
				}
			}
		})
	}
}

const countersHelp = `# HELP clustergate_sessions_created_total [ALPHA] Sessions taken on by the controller, by access level and target kind.
# TYPE clustergate_sessions_created_total counter
# HELP clustergate_sessions_ended_total [ALPHA] Sessions cleaned up and gone, by access level, target kind and reason: expired, revoked (deleted before expiry), or idle (ended unused for its idle timeout).
# TYPE clustergate_sessions_ended_total counter
`

func TestCollector(t *testing.T) {
	expired := metricsSession("expired", "admin", false)
	expired.Status.ExpiresAt = metricsAt(0)
	deleting := metricsSession("deleting", "admin", false)
	deleting.DeletionTimestamp = metricsAt(-time.Second)
	ready := readyCondition(metav1.ConditionTrue, "SessionReady", -30*time.Second)
	tests := []struct {
		name     string
		sessions []*v1alpha1.Session
		synced   bool
		want     string
	}{
		{name: "cache not synced: nothing", sessions: []*v1alpha1.Session{metricsSession("a", "admin", false, ready)}},
		{name: "no sessions", synced: true},
		{name: "sessions", synced: true, sessions: []*v1alpha1.Session{
			metricsSession("a", "admin", false, ready),
			metricsSession("b", "admin", false, ready),
			metricsSession("c", "viewer", true, ready),
			// Not Ready: the oldest of each reason counts.
			metricsSession("d", "viewer", true, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonCSRPending, -10*time.Minute)),
			metricsSession("e", "viewer", true, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonCSRPending, -20*time.Minute)),
			metricsSession("f", "viewer", false, readyCondition(metav1.ConditionFalse, v1alpha1.SessionReasonTargetUnreachable, -5*time.Minute)),
			// No condition yet: since its creation.
			metricsSession("g", "admin", false),
			// Waiting for an approver: to open, the older of two counts,
			// and to extend, in another namespace.
			waiting("h", "sre", v1alpha1.ApprovalOpen, -3*time.Minute),
			waiting("i", "sre", v1alpha1.ApprovalOpen, -7*time.Minute),
			waiting("j", "db", v1alpha1.ApprovalExtend, -2*time.Minute),
			// Over, and not counted.
			expired, deleting,
		}, want: fmt.Sprintf(`
clustergate_sessions{access_level="admin",ready="true",target_kind="shoot"} 2
clustergate_sessions{access_level="admin",ready="false",target_kind="shoot"} 3
clustergate_sessions{access_level="admin",ready="true",target_kind="cluster"} 1
clustergate_sessions{access_level="viewer",ready="true",target_kind="cluster"} 1
clustergate_sessions{access_level="viewer",ready="false",target_kind="cluster"} 2
clustergate_sessions{access_level="viewer",ready="false",target_kind="shoot"} 1
clustergate_session_oldest_not_ready_timestamp_seconds{reason="CSRPending",target_kind="cluster"} %d
clustergate_session_oldest_not_ready_timestamp_seconds{reason="TargetUnreachable",target_kind="shoot"} %d
clustergate_session_oldest_not_ready_timestamp_seconds{reason="Pending",target_kind="shoot"} %d
clustergate_session_oldest_not_ready_timestamp_seconds{reason="WaitingForApproval",target_kind="shoot"} %d
clustergate_session_pending_approvals{request="Open",session_namespace="sre",target_kind="shoot"} 2
clustergate_session_pending_approvals{request="Extend",session_namespace="db",target_kind="cluster"} 1
clustergate_session_oldest_pending_approval_timestamp_seconds{request="Open",session_namespace="sre",target_kind="shoot"} %d
clustergate_session_oldest_pending_approval_timestamp_seconds{request="Extend",session_namespace="db",target_kind="cluster"} %d
`, metricsNow.Add(-20*time.Minute).Unix(), metricsNow.Add(-5*time.Minute).Unix(), metricsNow.Add(-time.Minute).Unix(),
			metricsNow.Add(-7*time.Minute).Unix(), metricsNow.Add(-7*time.Minute).Unix(), metricsNow.Add(-2*time.Minute).Unix())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, s := range tt.sessions {
				if err := indexer.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			c := NewCollector(listers.NewSessionLister(indexer), func() bool { return tt.synced }, clocktesting.NewFakeClock(metricsNow))
			if err := testutil.CustomCollectAndCompare(c, strings.NewReader(collectorHelp+tt.want),
				"clustergate_sessions", "clustergate_session_oldest_not_ready_timestamp_seconds",
				"clustergate_session_pending_approvals", "clustergate_session_oldest_pending_approval_timestamp_seconds"); err != nil {
				t.Error(err)
			}
		})
	}
}

const collectorHelp = `
# HELP clustergate_sessions [ALPHA] Sessions neither expired nor being deleted, by access level, target kind and whether they are Ready.
# TYPE clustergate_sessions gauge
# HELP clustergate_session_oldest_not_ready_timestamp_seconds [ALPHA] Since when the session that has been not Ready longest has been so (its Ready condition's last transition, or its creation while it has none), in seconds since the epoch, by target kind and the condition's reason (Pending: none yet); absent while every session is Ready.
# TYPE clustergate_session_oldest_not_ready_timestamp_seconds gauge
# HELP clustergate_session_pending_approvals [ALPHA] Requests waiting for an approver, by the sessions' namespace, target kind and request (Open, Extend).
# TYPE clustergate_session_pending_approvals gauge
# HELP clustergate_session_oldest_pending_approval_timestamp_seconds [ALPHA] When the request that has waited longest for an approver was made (its requestedAt), in seconds since the epoch, by the sessions' namespace, target kind and request (Open, Extend); absent while no request waits.
# TYPE clustergate_session_oldest_pending_approval_timestamp_seconds gauge
`
