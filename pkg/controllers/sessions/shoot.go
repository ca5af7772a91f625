// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// A shoot session reaches its Shoot with a certificate of its own, minted
// through the Shoot's CSR API as for a cluster target: the Shoot's audit log
// names the owner and the session, not the server's Gardener identity. The
// server reaches the Shoot's CSR API with an admin kubeconfig Gardener
// issues; the session's requests never use it.

// shootAccessMargin is how long an admin kubeconfig must stay valid to be
// used again: longer than a pass that creates, approves, reads or deletes a
// CSR takes.
const shootAccessMargin = 5 * time.Minute

// shootAccess keeps, for each Shoot (by project and name: prod of shop is
// not prod of pay), the admin kubeconfig Gardener issued last, as a client
// of the Shoot: the passes that mint, renew or clean up
// sessions' certificates there share it instead of asking Gardener each
// time. It is kept in memory only, for at most its lifetime (Gardener's
// minimum, 10 minutes).
type shootAccess struct {
	gardener gardener.Requester
	mu       sync.Mutex
	shoots   map[gardener.Shoot]shootTarget
}

// shootTarget is a Shoot as the server reaches it, until expiresAt.
type shootTarget struct {
	target    *target
	expiresAt time.Time
}

func newShootAccess(g gardener.Requester) *shootAccess {
	return &shootAccess{gardener: g, shoots: map[gardener.Shoot]shootTarget{}}
}

// target returns a client of shoot with an admin kubeconfig valid for at
// least shootAccessMargin after now, asking Gardener for a new one when the
// last one is not, or the problem that kept it from one.
func (a *shootAccess) target(ctx context.Context, shoot gardener.Shoot, now time.Time) (*target, *TargetProblem) {
	a.mu.Lock()
	kept, ok := a.shoots[shoot]
	a.mu.Unlock()
	if ok && now.Add(shootAccessMargin).Before(kept.expiresAt) {
		return kept.target, nil
	}
	kc, err := a.gardener.RequestKubeconfig(ctx, shoot, gardener.MinExpiration)
	if err != nil {
		return nil, gardenerProblem(err)
	}
	t, problem := newTarget(kc.Data, "the admin kubeconfig Gardener issued for shoot "+shoot.String())
	if problem != nil {
		return nil, problem
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Expired ones go, so the map holds only Shoots in use. (client-go's
	// transport cache lets go of the transports of clients no one holds.)
	for key, kept := range a.shoots {
		if !now.Before(kept.expiresAt) {
			delete(a.shoots, key)
		}
	}
	a.shoots[shoot] = shootTarget{target: t, expiresAt: kc.ExpiresAt}
	return t, nil
}

// kept are the Shoots whose admin kubeconfig is kept and valid for at
// least shootAccessMargin after now: those reachable without asking
// Gardener.
func (a *shootAccess) kept(now time.Time) []gardener.Shoot {
	a.mu.Lock()
	defer a.mu.Unlock()
	var shoots []gardener.Shoot
	for shoot, kept := range a.shoots {
		if now.Add(shootAccessMargin).Before(kept.expiresAt) {
			shoots = append(shoots, shoot)
		}
	}
	return shoots
}

// gardenerProblem is the target problem of a failed request to Gardener.
func gardenerProblem(err error) *TargetProblem {
	reason := v1alpha1.SessionReasonTargetUnreachable
	switch gardener.ReasonOf(err) {
	case gardener.ShootNotFound, gardener.ProjectNotFound:
		reason = v1alpha1.SessionReasonTargetNotFound
	case gardener.Forbidden:
		reason = v1alpha1.SessionReasonTargetForbidden
	}
	return &TargetProblem{Reason: reason, Message: err.Error()}
}

// reachShoot returns a client of the session's Shoot. A failure is
// remembered, with a warning event, and Gardener is not asked again for the
// session before the failure's backoff: nothing tells the server that a
// Shoot appeared or that Gardener is back.
func (c *Controller) reachShoot(ctx context.Context, s *v1alpha1.Session) (*target, *TargetProblem) {
	now := c.clock.Now()
	if f, ok := c.gardenerFailures.Get(s.UID); ok && now.Before(f.RetryAt(time.Second, c.opts.RetryAfter)) {
		return nil, &TargetProblem{Reason: f.Reason, Message: f.Message}
	}
	t, problem := c.shoots.target(ctx, shootOf(s), now)
	if problem != nil {
		c.gardenerFailures.Record(s.UID, problem.Reason, problem.Message, now)
		c.recorder.Eventf(s, nil, corev1.EventTypeWarning, problem.Reason, "ReachShoot", "%s", problem.Message)
		return nil, problem
	}
	c.gardenerFailures.Forget(s.UID)
	return t, nil
}

// shootOf is the session's Shoot. One stored before projects were named
// has none, and the Gardener client asks for it in the default project.
func shootOf(s *v1alpha1.Session) gardener.Shoot {
	return gardener.Shoot{Project: s.Spec.Target.Shoot.Project, Name: s.Spec.Target.Shoot.Name}
}

// shootLevel is the Gardener access level of a shoot session.
func shootLevel(s *v1alpha1.Session) gardener.AccessLevel {
	if s.Spec.AccessLevel.Group == v1alpha1.AccessLevelAdmin {
		return gardener.Admin
	}
	return gardener.Viewer
}
