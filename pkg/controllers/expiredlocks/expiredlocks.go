// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package expiredlocks removes SessionLocks a while after they expired. An
// expired lock holds nothing; it stays listed (STATE Expired) for the
// retention so that whoever looks back on the incident finds it, and then
// goes, so that locks made with a TTL do not pile up.
package expiredlocks

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// Controller deletes each SessionLock once its spec.expiresAt lies the
// retention in the past. Locks without an expiry stay until deleted.
type Controller struct {
	retention      time.Duration
	client         versioned.Interface
	locks          listers.SessionLockLister
	synced         cache.InformerSynced
	clock          clock.WithTicker
	queue          *controllerutil.Queue
	removeHandlers func()
}

// New returns a controller over the shared informer on SessionLocks, which
// deletes through client locks expired for longer than retention.
func New(retention time.Duration, client versioned.Interface, locks informers.SessionLockInformer, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{retention: retention, client: client, locks: locks.Lister(), synced: locks.Informer().HasSynced, clock: clk}
	c.queue = controllerutil.NewQueue("expired-session-locks", clk, time.Second, 5*time.Minute, c.sync)
	remove, err := controllerutil.AddHandlers(controllerutil.InformerHandler{
		Informer: locks.Informer(), Handler: c.queue.EventHandler(controllerutil.ObjectKey)})
	if err != nil {
		return nil, err
	}
	c.removeHandlers = remove
	return c, nil
}

// Run removes expired locks until ctx ends, then lets go of the informer.
func (c *Controller) Run(ctx context.Context) {
	defer c.removeHandlers()
	c.queue.Run(ctx, 1, c.synced)
}

// sync deletes the lock once its time is up, or looks again then. The
// delete is conditional on the version read, so that a lock given a later
// expiry in the meantime is not lost: its update queues it again.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	l, err := c.locks.Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controllerutil.Result{}, nil
	}
	if err != nil {
		return controllerutil.Result{}, err
	}
	if l.Spec.ExpiresAt == nil || l.DeletionTimestamp != nil {
		return controllerutil.Result{}, nil
	}
	if wait := l.Spec.ExpiresAt.Add(c.retention).Sub(c.clock.Now()); wait > 0 {
		return controllerutil.Result{RequeueAfter: wait}, nil
	}
	err = c.client.ClustergateV1alpha1().SessionLocks().Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or changed: the change's event queues it again.
		return controllerutil.Result{}, nil
	case err != nil:
		return controllerutil.Result{}, err
	}
	klog.FromContext(ctx).Info("Removed an expired SessionLock", "lock", l.Name, "expiredAt", l.Spec.ExpiresAt.UTC(), "retention", c.retention)
	return controllerutil.Result{}, nil
}
