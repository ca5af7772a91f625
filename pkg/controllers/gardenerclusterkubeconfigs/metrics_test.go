// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllertest"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
)

// TestWriteMetrics: a write counts once as written, by why it was written,
// or once as failed, by why it failed.
func TestWriteMetrics(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	issued := gardener.Kubeconfig{Data: []byte("a kubeconfig"), ExpiresAt: now.Add(24 * time.Hour)}
	tests := []struct {
		name        string
		gardener    controllertest.Gardener
		secretError error
		// written: the kubeconfig was written; failed: the reason of the
		// failure.
		written bool
		failed  string
	}{
		{name: "written", gardener: controllertest.Gardener{Kubeconfig: issued}, written: true},
		{name: "Gardener does not answer", gardener: controllertest.Gardener{Err: &gardener.Error{Reason: gardener.GardenerUnavailable, Err: errors.New("503")}},
			failed: string(gardener.GardenerUnavailable)},
		{name: "Gardener refuses", gardener: controllertest.Gardener{Err: &gardener.Error{Reason: gardener.Forbidden, Err: errors.New("403")}},
			failed: string(gardener.Forbidden)},
		{name: "the Secret cannot be written", gardener: controllertest.Gardener{Kubeconfig: issued}, secretError: errors.New("etcd is full"),
			failed: ReasonSecretWriteFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes.Reset()
			writeFailures.Reset()
			obj := &v1alpha1.GardenerClusterKubeconfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kcp", Name: "c-123"},
				Spec: v1alpha1.GardenerClusterKubeconfigSpec{Shoot: v1alpha1.ShootReference{Name: "c-123"},
					Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Namespace: "kcp", Name: "kubeconfig-c-123", Key: "config"}}},
			}
			kube := kubefake.NewClientset()
			if tt.secretError != nil {
				kube.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.secretError
				})
			}
			c := testController(fake.NewClientset(obj), kube, tt.gardener, clocktesting.NewFakeClock(now))

			err := c.writeKubeconfig(context.Background(), Observed{Object: obj, Now: now}, Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonCreated, Create: true})
			// Only a failed Secret write is an error; Gardener's failures
			// are observed state for the next pass.
			if (err == nil) != (tt.failed != ReasonSecretWriteFailed) {
				t.Fatalf("writeKubeconfig: %v", err)
			}
			wantWritten := 0.0
			if tt.written {
				wantWritten = 1
			}
			if got, _ := testutil.GetCounterMetricValue(writes.WithLabelValues(v1alpha1.KubeconfigReasonCreated)); got != wantWritten {
				t.Errorf("writes_total{reason=Created} = %v, want %v", got, wantWritten)
			}
			for _, reason := range []string{string(gardener.GardenerUnavailable), string(gardener.Forbidden), ReasonSecretWriteFailed} {
				want := 0.0
				if reason == tt.failed {
					want = 1
				}
				if got, _ := testutil.GetCounterMetricValue(writeFailures.WithLabelValues(reason)); got != want {
					t.Errorf("write_failures_total{reason=%q} = %v, want %v", reason, got, want)
				}
			}
		})
	}
}
