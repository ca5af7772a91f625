// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// perform carries out one action: at most one write, of the object, its
// status or its Secret.
func (c *Controller) perform(ctx context.Context, o Observed, a Action) error {
	obj := o.Object
	objects := c.client.ClustergateV1alpha1().GardenerClusterKubeconfigs(obj.Namespace)
	switch a.Type {
	case None:
		return nil
	case AddFinalizer:
		patched := obj.DeepCopy()
		patched.Finalizers = append(patched.Finalizers, v1alpha1.KubeconfigFinalizer)
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	case RemoveFinalizer:
		patched := obj.DeepCopy()
		patched.Finalizers = slices.DeleteFunc(slices.Clone(patched.Finalizers), func(f string) bool { return f == v1alpha1.KubeconfigFinalizer })
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		c.opts.Schedule.Forget(obj.UID)
		c.failures.Forget(obj.UID)
		return controllerutil.IgnoreNotFound(err)
	case RemoveForceAnnotation:
		patched := obj.DeepCopy()
		delete(patched.Annotations, v1alpha1.AnnotationForceRotation)
		delete(patched.Annotations, v1alpha1.AnnotationForceRotationShort)
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	case DeleteSecret:
		err := c.kube.CoreV1().Secrets(obj.Spec.Kubeconfig.Secret.Namespace).Delete(ctx, a.SecretName, metav1.DeleteOptions{})
		if err == nil {
			c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "SecretDeleted", "Delete", "Deleted Secret %s", a.SecretName)
		}
		return controllerutil.IgnoreNotFound(err)
	case SyncSecretMetadata:
		// A patch of the labels alone: the cached Secret holds no
		// kubeconfig to send back (CacheTransform).
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": SecretLabels(obj)}})
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Secrets(o.Secret.Namespace).Patch(ctx, o.Secret.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		return err
	case UpdateStatus:
		if err := c.applyStatus(ctx, obj, a.Status); err != nil {
			return err
		}
		if a.Event != "" {
			eventType, action := corev1.EventTypeNormal, "Unlock"
			if a.Status.State == v1alpha1.KubeconfigStateLocked {
				eventType, action = corev1.EventTypeWarning, "Lock"
			}
			c.recorder.Eventf(obj, nil, eventType, a.Event, action, "%s", a.EventMessage)
		}
		return nil
	case WriteKubeconfig:
		return c.writeKubeconfig(ctx, o, a)
	}
	return fmt.Errorf("unknown action %q", a.Type)
}

// writeKubeconfig asks Gardener for a kubeconfig and writes the Secret in one
// create or update, so the Secret never holds a partial or empty kubeconfig.
// When Gardener fails, nothing is written: the failure is remembered for the
// next pass, which reports it and decides when to ask again.
func (c *Controller) writeKubeconfig(ctx context.Context, o Observed, a Action) error {
	obj := o.Object
	start := c.clock.Now()
	shoot := gardener.Shoot{Project: obj.Spec.Shoot.Project, Name: obj.Spec.Shoot.Name}
	kc, err := c.gardener.RequestKubeconfig(ctx, shoot, c.opts.Expiration)
	if err != nil {
		reason := gardener.ReasonOf(err)
		writeFailures.WithLabelValues(string(reason)).Inc()
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(reason), "RequestKubeconfig",
			"Requesting a kubeconfig for shoot %q failed: %v", shootName(obj), err)
		c.failures.Record(obj.UID, string(reason), fmt.Sprintf("requesting a kubeconfig for shoot %q: %v", shootName(obj), err), c.clock.Now())
		return nil
	}

	now := c.clock.Now().UTC()
	ref := obj.Spec.Kubeconfig.Secret
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace}, Type: corev1.SecretTypeOpaque}
	if !a.Create {
		s = o.Secret.DeepCopy()
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	maps.Copy(s.Labels, SecretLabels(obj))
	delete(s.Annotations, v1alpha1.AnnotationForceRotation)
	delete(s.Annotations, v1alpha1.AnnotationForceRotationShort)
	maps.Copy(s.Annotations, map[string]string{
		v1alpha1.AnnotationLastSync:  now.Format(time.RFC3339),
		v1alpha1.AnnotationExpiresAt: kc.ExpiresAt.UTC().Format(time.RFC3339),
		v1alpha1.AnnotationChecksum:  Checksum(kc.Data),
		v1alpha1.AnnotationReason:    a.Reason,
	})
	if a.ForcedBy != "" {
		s.Annotations[v1alpha1.AnnotationForcedBy] = a.ForcedBy
	}
	s.Data = map[string][]byte{ref.Key: kc.Data}

	secrets := c.kube.CoreV1().Secrets(ref.Namespace)
	if a.Create {
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: FieldManager})
	} else {
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if err != nil {
		writeFailures.WithLabelValues(ReasonSecretWriteFailed).Inc()
		return err
	}
	c.opts.Schedule.Observe(c.clock.Since(start))
	c.wrote(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, Checksum(kc.Data))
	c.failures.Forget(obj.UID)
	writes.WithLabelValues(a.Reason).Inc()
	c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, a.Reason, "WriteKubeconfig",
		"Wrote a kubeconfig valid until %s to Secret %s", kc.ExpiresAt.UTC().Format(time.RFC3339), ref.Name)
	return nil
}

// applyStatus writes the status onto the observed object: an update of
// the cached copy rather than server-side apply, as the session
// controller's (which says why).
func (c *Controller) applyStatus(ctx context.Context, obj *v1alpha1.GardenerClusterKubeconfig, s *Status) error {
	conditionStatus := metav1.ConditionFalse
	if s.State == v1alpha1.KubeconfigStateReady {
		conditionStatus = metav1.ConditionTrue
	}
	updated := obj.DeepCopy()
	updated.Status.State = s.State
	updated.Status.ObservedGeneration = s.ObservedGeneration
	updated.Status.Conditions = controllerutil.SetConditions(obj.Status.Conditions, metav1.Condition{Type: v1alpha1.KubeconfigConditionReady,
		Status: conditionStatus, Reason: s.Reason, Message: s.Message, ObservedGeneration: s.ObservedGeneration})
	updated.Status.LastSyncTime, updated.Status.ExpirationTime = s.LastSyncTime, s.ExpirationTime
	_, err := c.client.ClustergateV1alpha1().GardenerClusterKubeconfigs(obj.Namespace).UpdateStatus(ctx, updated,
		metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}
