// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeconfig

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
)

// ManagedSecretSelector selects the Secrets the controller manages. Its
// Secret informer (transformed by CacheTransform) watches only those, so that
// the cache does not hold every Secret of a control plane with 100,000
// clusters.
func ManagedSecretSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate})
}

// verifiedKubeconfig stands, in the controller's Secret cache, for a
// kubeconfig that loaded and matched the Secret's checksum when it was
// cached. The kubeconfigs themselves, each with Gardener's client
// certificate and key, would be the largest part of the cache, and a pass
// needs only to know that the kubeconfig is intact: a write replaces the
// data whole.
var verifiedKubeconfig = []byte("clustergate.dev/verified-kubeconfig")

// CacheTransform is the transform of the controller's Secret informer: it
// drops managedFields and puts verifiedKubeconfig in place of every intact
// kubeconfig. A value that is the marker itself, as someone may write it,
// is cached as empty, so that it is never taken for an intact kubeconfig.
func CacheTransform(obj any) (any, error) {
	obj, err := controllerutil.SlimForCache(obj)
	s, ok := obj.(*corev1.Secret)
	if err != nil || !ok {
		return obj, err
	}
	for key, value := range s.Data {
		switch {
		case bytes.Equal(value, verifiedKubeconfig):
			s.Data[key] = nil
		case intact(s, value):
			s.Data[key] = verifiedKubeconfig
		}
	}
	return s, nil
}

// intact tells whether data is the kubeconfig the Secret's checksum
// annotation records, and loads; in the cache, whether it was so when
// cached.
func intact(s *corev1.Secret, data []byte) bool {
	if bytes.Equal(data, verifiedKubeconfig) {
		return true
	}
	if len(data) == 0 || s.Annotations[v1alpha1.AnnotationChecksum] != Checksum(data) {
		return false
	}
	_, err := clientcmd.Load(data)
	return err == nil
}
