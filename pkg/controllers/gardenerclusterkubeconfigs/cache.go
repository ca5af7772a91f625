// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

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
// kubeconfig. A value that only equals the marker, as someone may write it,
// is cached as empty, so that it is never taken for an intact kubeconfig.
//
// It is idempotent, as client-go asks of a transform: an informer that
// starts with a watch-list (client-go's default) transforms every Secret
// it lists twice, once as it streams in and again when the informer's
// queue replaces its contents with them.
func CacheTransform(obj any) (any, error) {
	obj, err := controllerutil.SlimForCache(obj)
	s, ok := obj.(*corev1.Secret)
	if err != nil || !ok {
		return obj, err
	}
	for key, value := range s.Data {
		switch {
		case isMarker(value):
		case bytes.Equal(value, verifiedKubeconfig):
			s.Data[key] = nil
		case intact(s, value):
			s.Data[key] = verifiedKubeconfig
		}
	}
	return s, nil
}

// isMarker tells whether value is verifiedKubeconfig itself, put in by
// CacheTransform, and not bytes equal to it: a value decoded from the
// server never shares the marker's memory.
func isMarker(value []byte) bool {
	return len(value) == len(verifiedKubeconfig) && &value[0] == &verifiedKubeconfig[0]
}

// intact tells whether data is the kubeconfig the Secret's checksum
// annotation records, and loads; in the cache, whether it was so when
// cached.
func intact(s *corev1.Secret, data []byte) bool {
	if isMarker(data) {
		return true
	}
	if len(data) == 0 || s.Annotations[v1alpha1.AnnotationChecksum] != Checksum(data) {
		return false
	}
	_, err := clientcmd.Load(data)
	return err == nil
}
