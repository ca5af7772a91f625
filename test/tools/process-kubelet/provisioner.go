// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// provisionerName is the provisioner of the node's StorageClass, which
// kube-controller-manager's PersistentVolume binder names on the claims it
// leaves to it.
const provisionerName = "clustergate.dev/process-local"

// provisioner gives every claim of its StorageClass a hostPath
// PersistentVolume under the node's directory, as a local-path provisioner
// does; KCM's binder binds the two. With one node, a host directory is as
// persistent as the node: it outlives pods and is gone with the node's
// directory. Released volumes are deleted with their directory.
type provisioner struct {
	client kubernetes.Interface
	class  string
	dir    string
	logf   func(string, ...any)
}

// run makes the StorageClass (the default one) and provisions every few
// seconds until ctx ends.
func (p *provisioner) run(ctx context.Context) {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: p.class,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisionerName,
		ReclaimPolicy:     ptrTo(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptrTo(storagev1.VolumeBindingImmediate),
	}
	if _, err := p.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		p.logf("storage class %s: %v", p.class, err)
	}
	for {
		if err := p.pass(ctx); err != nil && ctx.Err() == nil {
			p.logf("provisioner: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// pass provisions pending claims and deletes released volumes.
func (p *provisioner) pass(ctx context.Context) error {
	claims, err := p.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range claims.Items {
		if c.Spec.VolumeName != "" || c.Annotations["volume.kubernetes.io/storage-provisioner"] != provisionerName {
			continue
		}
		path := filepath.Join(p.dir, string(c.UID))
		if err := os.MkdirAll(path, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(path, 0o777); err != nil {
			return err
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(c.UID),
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisionerName}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      c.Spec.Resources.Requests,
				AccessModes:                   c.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              p.class,
				ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: c.Namespace, Name: c.Name, UID: c.UID},
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptrTo(corev1.HostPathDirectoryOrCreate)}},
			},
		}
		if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		p.logf("provisioned %s for claim %s/%s", pv.Name, c.Namespace, c.Name)
	}
	volumes, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pv := range volumes.Items {
		if pv.Annotations["pv.kubernetes.io/provisioned-by"] != provisionerName || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.HostPath == nil {
			continue
		}
		if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
			return err
		}
		if err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
