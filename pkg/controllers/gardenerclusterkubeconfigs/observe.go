// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// allObjects returns the key of every object: a lock may hold any.
func (c *Controller) allObjects(any) []types.NamespacedName {
	objects, err := c.objects.List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]types.NamespacedName, 0, len(objects))
	for _, o := range objects {
		keys = append(keys, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	}
	return keys
}

// next observes an object and computes its next action; Observed.Object is
// nil when the object is gone.
func (c *Controller) next(ctx context.Context, key types.NamespacedName) (Observed, Action, error) {
	obj, err := c.objects.GardenerClusterKubeconfigs(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return Observed{}, Action{}, nil
	}
	if err != nil {
		return Observed{}, Action{}, err
	}
	observed, err := c.observe(ctx, obj)
	if err != nil {
		return Observed{}, Action{}, err
	}
	return observed, NextAction(observed, c.opts.Config), nil
}

// observe gathers the object's Secrets and the lock that holds it, and
// reserves the rotation slot of its kubeconfig. The
// Secret named in spec is read from the server when the cache, which holds
// only managed Secrets, lacks it: it may be someone else's.
func (c *Controller) observe(ctx context.Context, obj *v1alpha1.GardenerClusterKubeconfig) (Observed, error) {
	o := Observed{Object: obj, Now: c.clock.Now()}
	if f, ok := c.failures.Get(obj.UID); ok {
		o.Failure = &f
	}
	locks, err := c.locks.List(labels.Everything())
	if err != nil {
		return o, err
	}
	o.Lock = v1alpha1.MatchingKubeconfigLock(locks, obj.Namespace, obj.Spec.Shoot, o.Now)
	ref := obj.Spec.Kubeconfig.Secret
	secret, err := c.secrets.Secrets(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		secret, err = c.kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, err
	default:
		o.Secret = secret
	}
	managed, err := c.secrets.Secrets(obj.Namespace).List(labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: obj.Name}))
	if err != nil {
		return o, err
	}
	for _, s := range managed {
		if s.Name != ref.Name {
			o.Stale = append(o.Stale, s)
		}
	}
	o.RotateAt = reserveRotation(o, c.opts.Config)
	return o, nil
}
