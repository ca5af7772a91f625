// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// A session's RoleBindings outlive it when its target could not be reached
// while it was deleted (bindingCleanupWait bounds that wait), or when the
// server stopped between a binding's apply and the session's end and the
// session was removed by hand without its finalizer. The leader looks for
// such orphans when it starts leading and every OrphanSweepInterval, on
// every target it knows: the marked cluster-target Secrets, the Shoots
// scoped sessions name and the Shoots it holds an admin kubeconfig for
// (reached within the last ten minutes). A Shoot that none of those names
// is not looked at: its leftovers wait until a session names it again, and
// a later session of the same name removes them before its certificate is
// issued.

// sweptTarget is a target the orphan sweep looks at.
type sweptTarget struct {
	// kind is targetKindShoot or targetKindCluster; name names it in logs.
	kind, name string
	target     *target
}

// orphanSelector selects the RoleBindings the server made for sessions.
func orphanSelector() labels.Selector {
	managed, _ := labels.NewRequirement(credentials.LabelManagedBy, selection.Equals, []string{credentials.ManagedBy})
	uid, _ := labels.NewRequirement(LabelSessionUID, selection.Exists, nil)
	return labels.NewSelector().Add(*managed, *uid)
}

// sweepOrphansEvery sweeps once the caches are filled, then every
// OrphanSweepInterval until ctx ends.
func (c *Controller) sweepOrphansEvery(ctx context.Context, synced []cache.InformerSynced) {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	c.sweepOrphans(ctx)
	ticker := c.clock.NewTicker(c.opts.OrphanSweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			c.sweepOrphans(ctx)
		}
	}
}

// sweepOrphans removes the orphaned RoleBindings of every target the
// controller knows. A target it cannot reach or list is skipped until the
// next sweep: one that never had a scoped session may well not let the
// server list RoleBindings.
func (c *Controller) sweepOrphans(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for _, t := range c.knownTargets(ctx) {
		if err := c.sweepTarget(ctx, t); err != nil {
			logger.V(2).Info("Orphaned RoleBindings not swept", "targetKind", t.kind, "target", t.name, "err", err)
		}
	}
}

// knownTargets are the targets the orphan sweep looks at.
func (c *Controller) knownTargets(ctx context.Context) []sweptTarget {
	logger := klog.FromContext(ctx)
	var out []sweptTarget
	secrets, err := c.targets.Secrets(c.opts.Namespace).List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing the cluster targets")
	}
	for _, secret := range secrets {
		if !isClusterTarget(secret) {
			continue
		}
		if t, problem := clusterTargetOf(secret); problem == nil {
			out = append(out, sweptTarget{kind: targetKindCluster, name: secret.Name, target: t})
		}
	}
	if c.shoots == nil {
		return out
	}
	shoots := sets.New(c.shoots.kept(c.clock.Now())...)
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing the sessions")
	}
	for _, s := range sessions {
		if Scoped(s) && s.Spec.Target.Shoot != nil {
			shoots.Insert(shootOf(s))
		}
	}
	for _, shoot := range slices.SortedFunc(maps.Keys(shoots), func(a, b gardener.Shoot) int { return strings.Compare(a.String(), b.String()) }) {
		if t, problem := c.shoots.target(ctx, shoot, c.clock.Now()); problem == nil {
			out = append(out, sweptTarget{kind: targetKindShoot, name: v1alpha1.ShootTargetName(shoot.Project, shoot.Name), target: t})
		} else {
			logger.V(2).Info("Shoot not reached for the orphan sweep", "shoot", shoot.String(), "reason", problem.Reason, "message", problem.Message)
		}
	}
	return out
}

// sweepTarget deletes the target's RoleBindings of sessions that no longer
// exist. The sessions are listed after the bindings: a binding is made
// only by a pass that read its session from the same cache, so a binding
// listed belongs to a session the cache then has, or to one that is gone.
// Each delete is for the binding listed (its UID as precondition), never a
// later one of the same name.
func (c *Controller) sweepTarget(ctx context.Context, t sweptTarget) error {
	bindings, err := t.target.kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: orphanSelector().String()})
	if err != nil {
		return err
	}
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		return err
	}
	live := sets.New[types.UID]()
	for _, s := range sessions {
		live.Insert(s.UID)
	}
	logger := klog.FromContext(ctx)
	for _, b := range bindings.Items {
		if live.Has(types.UID(b.Labels[LabelSessionUID])) {
			continue
		}
		uid := b.UID
		err := t.target.kube.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		case err != nil:
			return err
		default:
			orphanedBindingsRemoved.WithLabelValues(t.kind).Inc()
			logger.Info("Removed an orphaned RoleBinding", "targetKind", t.kind, "target", t.name, "roleBinding", klog.KRef(b.Namespace, b.Name),
				"session", klog.KRef(b.Labels[credentials.LabelSessionNamespace], b.Labels[credentials.LabelSessionName]))
		}
	}
	return nil
}
