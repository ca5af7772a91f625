// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Values of the operation label: the subresource a kubeconfig comes from,
// the read of a Project, the read of a Shoot's labels, and the probe.
const (
	operationAdmin   = "adminkubeconfig"
	operationProject = "project"
	operationShoot   = "shoot"
	operationProbe   = "probe"
)

// operations are the values of the operation label.
var operations = []string{operationAdmin, operationProject, operationShoot, operationProbe}

// resultSuccess is the result label of a request that succeeded; a failed
// one carries its Reason.
const resultSuccess = "Success"

var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "clustergate", Subsystem: "gardener", Name: "requests_total",
		Help: "Requests to Gardener, by operation (adminkubeconfig, project, shoot, probe), Gardener project and result " +
			"(Success, or why it failed: ShootNotFound, ProjectNotFound, Forbidden, ShootNotReady, GardenerUnavailable).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "project", "result"})
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "clustergate", Subsystem: "gardener", Name: "request_duration_seconds",
		Help:           "Duration of requests to Gardener, failed ones included, by operation.",
		Buckets:        []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
)

func init() {
	legacyregistry.MustRegister(requests, requestDuration)
	for _, op := range operations {
		requestDuration.WithLabelValues(op)
	}
}

// initMetrics makes every request series of project exist at zero.
func initMetrics(project string) {
	for _, op := range operations {
		for _, result := range []Reason{resultSuccess, ShootNotFound, ProjectNotFound, Forbidden, ShootNotReady, GardenerUnavailable} {
			requests.WithLabelValues(op, project, string(result))
		}
	}
}

// observe records a request to Gardener about project that started at
// start and ended with err. The project label is bounded by the projects
// whose Shoots sessions and kept kubeconfigs name, which users can name
// only with a grant in them (TargetAccess) or, for an unknown project, at
// most once per projectMissingTTL each.
func observe(operation, project string, start time.Time, err error) {
	result := resultSuccess
	if err != nil {
		result = string(ReasonOf(err))
	}
	requests.WithLabelValues(operation, project, result).Inc()
	requestDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
}

// Probe lists one Shoot of the default project every interval until ctx ends, so
// that the request metrics tell whether Gardener answers even while no
// kubeconfig is due; a change of answer is logged. A zero interval probes
// never.
func (c *Client) Probe(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	logger := klog.FromContext(ctx).WithValues("project", c.project)
	last := Reason(resultSuccess)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := c.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		result := Reason(resultSuccess)
		if err != nil {
			result = ReasonOf(err)
		}
		switch {
		case result == last:
		case err != nil:
			logger.Info("Gardener does not answer the probe", "reason", result, "err", err)
		default:
			logger.Info("Gardener answers the probe again")
		}
		last = result
	}, interval)
}

// probe lists one Shoot of the default project and records the request,
// unless ctx ended meanwhile: stopping is no answer from Gardener. A
// project that cannot be resolved fails the probe with the reason why.
func (c *Client) probe(ctx context.Context) (err error) {
	namespace, err := c.Projects.Namespace(ctx, c.project)
	if err != nil {
		return err
	}
	defer func(start time.Time) {
		if ctx.Err() == nil {
			observe(operationProbe, c.project, start, err)
		}
	}(time.Now())
	// The list itself is of no interest, and the client has no scheme to
	// decode it with.
	_, err = c.rest.Get().Namespace(namespace).Resource("shoots").Param("limit", "1").Do(ctx).Raw()
	return probeError(err)
}

// probeError classifies a failed probe: a list of Shoots fails for want of
// permission or because Gardener is not there to answer.
func probeError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &Error{Reason: Forbidden, Err: err}
	}
	return &Error{Reason: GardenerUnavailable, Err: err}
}
