package session

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

func TestIsClusterTarget(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "marked", labels: map[string]string{credentials.LabelClusterTarget: "true"}, want: true},
		{name: "unmarked"},
		{name: "marked with another value", labels: map[string]string{credentials.LabelClusterTarget: "yes"}},
		{name: "a session's credentials, marked by someone",
			labels: map[string]string{credentials.LabelClusterTarget: "true", credentials.LabelSessionName: "other", credentials.LabelSessionNamespace: "sre"}},
		{name: "a kept Gardener kubeconfig, marked by someone",
			labels: map[string]string{credentials.LabelClusterTarget: "true", v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate}},
		{name: "Kyma's kubeconfig, marked by someone",
			labels: map[string]string{credentials.LabelClusterTarget: "true", v1alpha1.LabelManagedBy: v1alpha1.ManagedByKyma}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Labels: tt.labels}}
			if got := isClusterTarget(s); got != tt.want {
				t.Errorf("isClusterTarget = %v, want %v", got, tt.want)
			}
		})
	}
}
