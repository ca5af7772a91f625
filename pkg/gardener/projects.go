// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// ProjectNotFound means Gardener has no such project, or the project has
// no namespace yet.
const ProjectNotFound Reason = "ProjectNotFound"

// How long an answer about a project is kept. A Project's spec.namespace
// never changes once set (Gardener refuses the update), so a found one is
// kept long; a missing one briefly, so that a project just created is
// found soon, while a flood of requests naming an unknown project asks
// Gardener once per projectMissingTTL.
const (
	projectTTL        = 10 * time.Minute
	projectMissingTTL = 10 * time.Second
)

// Projects resolves Gardener projects to their namespaces in the garden,
// from the spec.namespace of their Project objects, and keeps the answers:
// the TargetAccess admission plugin asks on every create of a session or
// kubeconfig for a Shoot, the controllers on every kubeconfig they fetch.
// Failed requests are not kept.
type Projects struct {
	rest  rest.Interface
	clock clock.PassiveClock

	mu    sync.Mutex
	known map[string]projectAnswer
}

// projectAnswer is what Gardener said of a project: its namespace, or ""
// when it has none, until expires.
type projectAnswer struct {
	namespace string
	expires   time.Time
}

// NewProjects returns a resolver that asks Gardener through client (of
// core.gardener.cloud/v1beta1, as NewClientForConfig builds it).
func NewProjects(client rest.Interface, clk clock.PassiveClock) *Projects {
	return &Projects{rest: client, clock: clk, known: map[string]projectAnswer{}}
}

// Namespace returns the namespace of project, or an *Error with reason
// ProjectNotFound, Forbidden or GardenerUnavailable.
func (p *Projects) Namespace(ctx context.Context, project string) (_ string, err error) {
	now := p.clock.Now()
	p.mu.Lock()
	answer, ok := p.known[project]
	p.mu.Unlock()
	if ok && now.Before(answer.expires) {
		return answer.namespace, notFound(project, answer.namespace)
	}
	defer func(start time.Time) { observe(operationProject, project, start, err) }(time.Now())
	raw, err := p.rest.Get().AbsPath("/apis/core.gardener.cloud/v1beta1/projects", project).Do(ctx).Raw()
	var found struct {
		Spec struct {
			Namespace string `json:"namespace"`
		} `json:"spec"`
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", probeError(err)
	default:
		if err := json.Unmarshal(raw, &found); err != nil {
			return "", &Error{Reason: GardenerUnavailable, Err: fmt.Errorf("decoding project %q: %w", project, err)}
		}
	}
	namespace, ttl := found.Spec.Namespace, projectTTL
	if namespace == "" {
		ttl = projectMissingTTL
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Stale answers go, so that the map holds only projects in use.
	for name, a := range p.known {
		if !now.Before(a.expires) {
			delete(p.known, name)
		}
	}
	p.known[project] = projectAnswer{namespace: namespace, expires: now.Add(ttl)}
	return namespace, notFound(project, namespace)
}

// notFound is the error of a project without a namespace, nil for one with.
func notFound(project, namespace string) error {
	if namespace != "" {
		return nil
	}
	return &Error{Reason: ProjectNotFound, Err: fmt.Errorf("Gardener has no project %q with a namespace", project)} //nolint:staticcheck // ST1005: Gardener is a name.
}
