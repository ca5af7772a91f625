package gardenerclusterkubeconfig

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// TestPrepareForCreateFinalizer: a server that runs the kubeconfig controller
// creates every GardenerClusterKubeconfig with the controller's finalizer, once, next to any
// the client asked for; a server without the controller adds none, as nothing would
// release it.
func TestPrepareForCreateFinalizer(t *testing.T) {
	tests := []struct {
		name     string
		finalize bool
		given    []string
		want     []string
	}{
		{name: "standalone", finalize: false, want: nil},
		{name: "standalone keeps the client's", finalize: false, given: []string{"example.com/hold"}, want: []string{"example.com/hold"}},
		{name: "controllers run", finalize: true, want: []string{v1alpha1.KubeconfigFinalizer}},
		{name: "next to the client's", finalize: true, given: []string{"example.com/hold"}, want: []string{"example.com/hold", v1alpha1.KubeconfigFinalizer}},
		{name: "already there", finalize: true, given: []string{v1alpha1.KubeconfigFinalizer}, want: []string{v1alpha1.KubeconfigFinalizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &clustergate.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre", Finalizers: tt.given}}
			NewStrategy(registrytest.Scheme(), tt.finalize).PrepareForCreate(context.Background(), k)
			if diff := cmp.Diff(tt.want, k.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}
