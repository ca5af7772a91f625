// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestCacheTransform: the cache holds a marker instead of an intact
// kubeconfig, and a pass reads the cached Secret as it would the Secret
// itself: intact, or damaged (edited, unreadable, missing, or the marker
// written by someone), so that a damaged one is still repaired.
func TestCacheTransform(t *testing.T) {
	notKubeconfig := []byte("not: [a kubeconfig")
	tests := []struct {
		name       string
		secret     *corev1.Secret
		wantData   map[string][]byte
		wantIntact bool
	}{
		{name: "intact: replaced by the marker", secret: secret(),
			wantData: map[string][]byte{"config": verifiedKubeconfig}, wantIntact: true},
		{name: "other keys intact or not are judged alone", secret: secret(func(s *corev1.Secret) { s.Data["other"] = []byte("x") }),
			wantData: map[string][]byte{"config": verifiedKubeconfig, "other": []byte("x")}, wantIntact: true},
		{name: "edited: kept, damaged", secret: secret(func(s *corev1.Secret) { s.Data["config"] = []byte(testKubeconfig + "# edited\n") }),
			wantData: map[string][]byte{"config": []byte(testKubeconfig + "# edited\n")}},
		{name: "matches its checksum but does not load: kept, damaged", secret: secret(func(s *corev1.Secret) {
			s.Data["config"] = notKubeconfig
			s.Annotations[v1alpha1.AnnotationChecksum] = Checksum(notKubeconfig)
		}), wantData: map[string][]byte{"config": notKubeconfig}},
		{name: "the marker written by someone: emptied, damaged", secret: secret(func(s *corev1.Secret) {
			s.Data["config"] = verifiedKubeconfig
			s.Annotations[v1alpha1.AnnotationChecksum] = Checksum(verifiedKubeconfig)
		}), wantData: map[string][]byte{"config": nil}},
		{name: "no data", secret: secret(func(s *corev1.Secret) { s.Data = nil })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.secret.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			out, err := CacheTransform(tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			cached := out.(*corev1.Secret)
			if diff := cmp.Diff(tt.wantData, cached.Data); diff != "" {
				t.Errorf("cached data (-want +got):\n%s", diff)
			}
			if cached.ManagedFields != nil {
				t.Errorf("managedFields kept")
			}
			if _, ok := readWritten(cached, "config"); ok != tt.wantIntact {
				t.Errorf("read from the cache as intact = %v, want %v", ok, tt.wantIntact)
			}
		})
	}
	if out, err := CacheTransform("not a Secret"); err != nil || out != "not a Secret" {
		t.Errorf("a non-Secret: %v, %v", out, err)
	}
}
