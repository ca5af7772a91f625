// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"errors"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	openRequests = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "clustergate", Subsystem: "proxy", Name: "open_requests",
		Help:           "Proxied requests and streams open on this replica.",
		StabilityLevel: metrics.ALPHA,
	})
	closedRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "proxy", Name: "closed_requests_total",
		Help:           "Proxied requests and streams that ended, by reason (completed, expired, idle, deleted, not_ready, locked, stopping).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	refusedRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "proxy", Name: "refused_requests_total",
		Help:           "Proxied requests refused by this replica's connection tracker, by reason (expired, idle, deleted, not_ready, locked, session_limit, owner_limit, stopping, unrecordable, scope, deny, discovery).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	deniedRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "proxy", Name: "denied_requests_total",
		Help:           "Proxied requests refused by a deny rule of --session-access-config, by the rule's name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"rule"})
)

// completedRequests is closedRequests' series of the requests that ran
// their course, which nearly every request counts: looked up once, as the
// vector's own lookup hashes the label value and takes a lock.
var completedRequests metrics.CounterMetric

func init() {
	legacyregistry.MustRegister(openRequests, closedRequests, refusedRequests, deniedRequests)
	// Every series exists from the start at zero, so that rate() and
	// increase() count the first request of each reason too.
	for _, err := range []error{nil, ErrExpired, ErrIdle, ErrDeleted, ErrNotReady} {
		closedRequests.WithLabelValues(reasonLabel(err))
	}
	completedRequests = closedRequests.WithLabelValues(reasonLabel(nil))
	for _, err := range []error{ErrExpired, ErrIdle, ErrDeleted, ErrNotReady, ErrTooManyForSession, ErrTooManyForOwner, errUnrecordable} {
		refusedRequests.WithLabelValues(reasonLabel(err))
	}
	for _, reason := range []string{reasonScope, reasonDeny, reasonDiscovery} {
		refusedRequests.WithLabelValues(reason)
	}
}

// countClosed counts a request that ended, cause being why the session
// ended it (nil: it ran its course).
func countClosed(cause error) {
	if cause == nil {
		completedRequests.Inc()
		return
	}
	closedRequests.WithLabelValues(reasonLabel(cause)).Inc()
}

// reasonLabel names why a connection ended or was refused, for metrics;
// nil is a connection that ran its course.
func reasonLabel(err error) string {
	var refusal *accessRefusal
	switch {
	case errors.As(err, &refusal):
		return refusal.reason
	case err == nil:
		return "completed"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrIdle):
		return "idle"
	case errors.Is(err, ErrDeleted):
		return "deleted"
	case errors.Is(err, ErrNotReady):
		return "not_ready"
	case errors.Is(err, ErrLocked):
		return "locked"
	case errors.Is(err, ErrTooManyForSession):
		return "session_limit"
	case errors.Is(err, ErrTooManyForOwner):
		return "owner_limit"
	case errors.Is(err, ErrStopping):
		return "stopping"
	case errors.Is(err, errUnrecordable):
		return "unrecordable"
	}
	return "other"
}
