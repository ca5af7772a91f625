// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

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
// creates every GardenerClusterKubeconfig with the controller's finalizer; without the
// controller it adds none, as nothing would release it.
func TestPrepareForCreateFinalizer(t *testing.T) {
	for finalize, want := range map[bool][]string{false: nil, true: {v1alpha1.KubeconfigFinalizer}} {
		k := &clustergate.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}}
		NewStrategy(registrytest.Scheme(), finalize, "local").PrepareForCreate(context.Background(), k)
		if diff := cmp.Diff(want, k.Finalizers); diff != "" {
			t.Errorf("controller runs: %v: finalizers (-want +got):\n%s", finalize, diff)
		}
	}
}
