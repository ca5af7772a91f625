// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllertest"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
)

// testController is a controller over fake clients, without informers:
// enough to perform actions.
func testController(client versioned.Interface, kube kubernetes.Interface, g gardener.Requester, clk clock.WithTicker) *Controller {
	return &Controller{client: client, kube: kube, gardener: g, clock: clk, recorder: events.NewFakeRecorder(10),
		pending: map[types.NamespacedName]pendingWrite{}, failures: controllerutil.NewFailures()}
}

// TestPerform: every action writes exactly what it says, once, and a
// failed Gardener request writes nothing and is remembered instead.
func TestPerform(t *testing.T) {
	now := synced.Add(time.Hour)
	issued := gardener.Kubeconfig{Data: []byte(testKubeconfig), ExpiresAt: now.Add(24 * time.Hour)}
	forced := func(o *v1alpha1.GardenerClusterKubeconfig) {
		o.Annotations = map[string]string{v1alpha1.AnnotationForceRotation: "true"}
	}
	tests := []struct {
		name     string
		obj      *v1alpha1.GardenerClusterKubeconfig
		secret   *corev1.Secret
		gardener controllertest.Gardener
		action   Action
		want     []string
		// check looks at the fake clients after the pass.
		check func(t *testing.T, c *Controller, kube *kubefake.Clientset)
		// failure is the reason remembered for the next pass, if any.
		failure string
	}{
		{name: "add the finalizer", obj: object(func(o *v1alpha1.GardenerClusterKubeconfig) { o.Finalizers = nil }),
			action: Action{Type: AddFinalizer}, want: []string{"update gardenerclusterkubeconfigs"}},
		{name: "create the Secret with Gardener's kubeconfig", obj: object(), gardener: controllertest.Gardener{Kubeconfig: issued},
			action: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonCreated, Create: true},
			want:   []string{"create secrets"},
			check: func(t *testing.T, _ *Controller, kube *kubefake.Clientset) {
				s, err := kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), "kcp", "kubeconfig-c-123")
				if err != nil {
					t.Fatal(err)
				}
				got := s.(*corev1.Secret)
				if string(got.Data["config"]) != testKubeconfig || got.Annotations[v1alpha1.AnnotationChecksum] != Checksum([]byte(testKubeconfig)) ||
					got.Annotations[v1alpha1.AnnotationReason] != v1alpha1.KubeconfigReasonCreated || got.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByClustergate {
					t.Errorf("Secret written as %+v", got)
				}
			}},
		{name: "Gardener fails: nothing written, the failure remembered", obj: object(),
			gardener: controllertest.Gardener{Err: &gardener.Error{Reason: gardener.ShootNotFound, Err: errors.New("404")}},
			action:   Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonCreated, Create: true},
			failure:  string(gardener.ShootNotFound)},
		{name: "rotate: update the Secret", obj: object(ready), secret: secret(), gardener: controllertest.Gardener{Kubeconfig: issued},
			action: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRotated}, want: []string{"update secrets"}},
		{name: "remove an honoured force annotation", obj: object(ready, forced), secret: secret(),
			action: Action{Type: RemoveForceAnnotation}, want: []string{"update gardenerclusterkubeconfigs"}},
		{name: "delete a stale Secret", obj: object(ready), secret: secret(),
			action: Action{Type: DeleteSecret, SecretName: "kubeconfig-c-123"}, want: []string{"delete secrets"}},
		{name: "bring labels in line", obj: object(ready), secret: secret(),
			action: Action{Type: SyncSecretMetadata}, want: []string{"patch secrets"}},
		{name: "write the status", obj: object(), secret: secret(),
			action: Action{Type: UpdateStatus, Status: &Status{State: v1alpha1.KubeconfigStateReady, Reason: v1alpha1.KubeconfigReasonCreated}},
			want:   []string{"update gardenerclusterkubeconfigs/status"}},
		{name: "release a deleted object", obj: object(ready),
			action: Action{Type: RemoveFinalizer}, want: []string{"update gardenerclusterkubeconfigs"}},
		{name: "nothing to do", obj: object(ready), secret: secret(), action: Action{Type: None}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.obj)
			objs := []runtime.Object{}
			if tt.secret != nil {
				objs = append(objs, tt.secret)
			}
			kube := kubefake.NewClientset(objs...)
			c := testController(client, kube, tt.gardener, clocktesting.NewFakeClock(now))
			c.failures.Record(tt.obj.UID, "Earlier", "an earlier failure", now.Add(-time.Minute))

			err := c.perform(context.Background(), Observed{Object: tt.obj, Secret: tt.secret, Now: now}, tt.action)
			if err != nil {
				t.Fatalf("perform: %v", err)
			}
			if diff := cmp.Diff(tt.want, controllertest.Writes(client.Actions(), kube.Actions())); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			f, failed := c.failures.Get(tt.obj.UID)
			switch {
			case tt.failure != "" && (!failed || f.Reason != tt.failure || f.Count != 2):
				t.Errorf("remembered failure = %+v (%v), want reason %s, second in a row", f, failed, tt.failure)
			case tt.action.Type == WriteKubeconfig && tt.failure == "" && failed:
				t.Errorf("a written kubeconfig left the failure %+v behind", f)
			}
			if tt.check != nil {
				tt.check(t, c, kube)
			}
		})
	}
}
