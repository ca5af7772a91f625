// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// volumes materializes a pod's volumes as directories of the host, which
// the containers' inits bind-mount at their mount paths.
type volumes struct {
	client kubernetes.Interface
	pod    *corev1.Pod
	podIP  string
	// dir holds one directory per volume the node writes.
	dir string
	// paths maps each volume to its host directory.
	paths map[string]string
	// refreshAt is when the projected service-account tokens are renewed:
	// at 80% of their lifetime, as the kubelet does.
	refreshAt time.Time
}

// defaultFileMode is a Secret, ConfigMap, downward API or projected
// volume's file mode when the pod sets none (0644).
const defaultFileMode = 0o644

// setup writes every volume once; unsupported kinds fail the pod.
func (v *volumes) setup(ctx context.Context) error {
	v.paths = map[string]string{}
	for _, vol := range v.pod.Spec.Volumes {
		p, err := v.materialize(ctx, vol)
		if err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		v.paths[vol.Name] = p
	}
	return nil
}

// refresh rewrites the projected volumes once their tokens are due.
func (v *volumes) refresh(ctx context.Context) error {
	if v.refreshAt.IsZero() || time.Now().Before(v.refreshAt) {
		return nil
	}
	v.refreshAt = time.Time{}
	for _, vol := range v.pod.Spec.Volumes {
		if vol.Projected != nil {
			if _, err := v.materialize(ctx, vol); err != nil {
				return fmt.Errorf("volume %q: %w", vol.Name, err)
			}
		}
	}
	return nil
}

// materialize writes one volume and returns its host directory.
func (v *volumes) materialize(ctx context.Context, vol corev1.Volume) (string, error) {
	dir := filepath.Join(v.dir, vol.Name)
	src := vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		// World-writable like the kubelet's, whatever the umask.
		return dir, os.Chmod(dir, 0o777)
	case src.HostPath != nil:
		return src.HostPath.Path, nil
	case src.PersistentVolumeClaim != nil:
		return v.claimPath(ctx, src.PersistentVolumeClaim.ClaimName)
	}
	files := map[string]fileContent{}
	var err error
	switch {
	case src.Secret != nil:
		err = v.secretFiles(ctx, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, src.Secret.DefaultMode, files)
	case src.ConfigMap != nil:
		err = v.configMapFiles(ctx, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, src.ConfigMap.DefaultMode, files)
	case src.DownwardAPI != nil:
		err = v.downwardAPIFiles(src.DownwardAPI.Items, src.DownwardAPI.DefaultMode, files)
	case src.Projected != nil:
		err = v.projectedFiles(ctx, src.Projected, files)
	default:
		return "", fmt.Errorf("this node does not support the volume's kind")
	}
	if err != nil {
		return "", err
	}
	return dir, writeFiles(dir, files, v.pod.Spec.SecurityContext)
}

// fileContent is one file of a volume.
type fileContent struct {
	data []byte
	mode os.FileMode
}

// modeOr is the mode *m, or def.
func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m).Perm()
	}
	return def
}

// keyFiles adds data's keys (or only items) to files.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, mode os.FileMode, files map[string]fileContent) error {
	if len(items) == 0 {
		for k, d := range data {
			files[k] = fileContent{d, mode}
		}
		return nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("no key %q", it.Key)
		}
		files[it.Path] = fileContent{d, modeOr(it.Mode, mode)}
	}
	return nil
}

func (v *volumes) secretFiles(ctx context.Context, name string, items []corev1.KeyToPath, optional *bool, mode *int32, files map[string]fileContent) error {
	s, err := v.client.CoreV1().Secrets(v.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return err
	}
	return keyFiles(s.Data, items, modeOr(mode, defaultFileMode), files)
}

func (v *volumes) configMapFiles(ctx context.Context, name string, items []corev1.KeyToPath, optional *bool, mode *int32, files map[string]fileContent) error {
	cm, err := v.client.CoreV1().ConfigMaps(v.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyFiles(data, items, modeOr(mode, defaultFileMode), files)
}

func (v *volumes) downwardAPIFiles(items []corev1.DownwardAPIVolumeFile, mode *int32, files map[string]fileContent) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = fieldValue(v.pod, it.FieldRef.FieldPath, v.podIP)
		case it.ResourceFieldRef != nil:
			value, err = resourceValue(v.pod, it.ResourceFieldRef)
		}
		if err != nil {
			return err
		}
		files[it.Path] = fileContent{[]byte(value), modeOr(it.Mode, modeOr(mode, defaultFileMode))}
	}
	return nil
}

// projectedFiles writes each source of a projected volume; a
// service-account token comes from the TokenRequest API, bound to the pod.
func (v *volumes) projectedFiles(ctx context.Context, p *corev1.ProjectedVolumeSource, files map[string]fileContent) error {
	for _, s := range p.Sources {
		var err error
		switch {
		case s.Secret != nil:
			err = v.secretFiles(ctx, s.Secret.Name, s.Secret.Items, s.Secret.Optional, p.DefaultMode, files)
		case s.ConfigMap != nil:
			err = v.configMapFiles(ctx, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, p.DefaultMode, files)
		case s.DownwardAPI != nil:
			err = v.downwardAPIFiles(s.DownwardAPI.Items, p.DefaultMode, files)
		case s.ServiceAccountToken != nil:
			err = v.tokenFile(ctx, s.ServiceAccountToken, modeOr(p.DefaultMode, defaultFileMode), files)
		default:
			err = fmt.Errorf("unsupported projected source")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (v *volumes) tokenFile(ctx context.Context, t *corev1.ServiceAccountTokenProjection, mode os.FileMode, files map[string]fileContent) error {
	var audiences []string
	if t.Audience != "" {
		audiences = []string{t.Audience}
	}
	expiration := int64(3600)
	if t.ExpirationSeconds != nil {
		expiration = *t.ExpirationSeconds
	}
	tr, err := v.client.CoreV1().ServiceAccounts(v.pod.Namespace).CreateToken(ctx, v.pod.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: &expiration,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: v.pod.Name, UID: v.pod.UID},
		}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token request: %w", err)
	}
	issued := time.Now()
	lifetime := tr.Status.ExpirationTimestamp.Sub(issued)
	if at := issued.Add(lifetime * 8 / 10); v.refreshAt.IsZero() || at.Before(v.refreshAt) {
		v.refreshAt = at
	}
	files[t.Path] = fileContent{[]byte(tr.Status.Token), mode}
	return nil
}

// claimPath is the local directory of the PersistentVolume bound to claim.
func (v *volumes) claimPath(ctx context.Context, claim string) (string, error) {
	pvc, err := v.client.CoreV1().PersistentVolumeClaims(v.pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("claim %s is not bound", claim)
	}
	pv, err := v.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, os.MkdirAll(pv.Spec.HostPath.Path, 0o777)
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("volume %s is neither hostPath nor local", pv.Name)
}

// writeFiles replaces dir's files with files, each written to a temporary
// name and renamed, so that a container reading a renewed token never sees
// half of it. With an fsGroup, files belong to that group.
func writeFiles(dir string, files map[string]fileContent, sc *corev1.PodSecurityContext) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gid := -1
	if sc != nil && sc.FSGroup != nil {
		gid = int(*sc.FSGroup)
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return err
		}
		mode := f.mode
		if gid >= 0 {
			if err := os.Chown(tmp, -1, gid); err != nil {
				return err
			}
			mode |= 0o040
		}
		if err := os.Chmod(tmp, mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return nil
}

// fieldValue is the downward API's value of a pod field.
func fieldValue(pod *corev1.Pod, path, podIP string) (string, error) {
	if key, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(key, "']")], nil
	}
	if key, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(key, "']")], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, nil
	}
	return "", fmt.Errorf("unsupported field %q", path)
}

// formatMap writes labels or annotations as the kubelet does: key="value"
// lines, sorted.
func formatMap(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for k, v := range m {
		lines = append(lines, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// resourceValue is the downward API's value of a container's resource.
func resourceValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector) (string, error) {
	for _, c := range pod.Spec.Containers {
		if ref.ContainerName != "" && c.Name != ref.ContainerName {
			continue
		}
		kind, res, _ := strings.Cut(ref.Resource, ".")
		list := c.Resources.Limits
		if kind == "requests" {
			list = c.Resources.Requests
		}
		q, ok := list[corev1.ResourceName(res)]
		if !ok {
			return "0", nil
		}
		divisor := ref.Divisor
		if divisor.IsZero() {
			return q.String(), nil
		}
		return fmt.Sprint((q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()), nil
	}
	return "", fmt.Errorf("no container %q", ref.ContainerName)
}
