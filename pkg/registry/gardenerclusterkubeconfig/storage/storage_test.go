// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

const ns = "kcp-system"

func newStorage(t *testing.T) GardenerClusterKubeconfigStorage {
	t.Helper()
	scheme := registrytest.Scheme()
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "gardenerclusterkubeconfigs"), false, "local")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.GardenerClusterKubeconfig.Destroy)
	return s
}

func newKubeconfig(name, shoot string) *clustergate.GardenerClusterKubeconfig {
	return &clustergate.GardenerClusterKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clustergate.GardenerClusterKubeconfigSpec{
			Shoot: clustergate.ShootReference{Name: shoot},
			// No namespace: the server fills in the object's own.
			Kubeconfig: clustergate.KubeconfigTarget{Secret: clustergate.SecretKeyReference{Name: "kubeconfig-" + name, Key: "config"}},
		},
	}
}

func (s GardenerClusterKubeconfigStorage) mustCreate(t *testing.T, k *clustergate.GardenerClusterKubeconfig) {
	t.Helper()
	if _, err := s.GardenerClusterKubeconfig.Create(registrytest.Context(ns), k, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", k.Name, err)
	}
}

func (s GardenerClusterKubeconfigStorage) mustGet(t *testing.T, name string) *clustergate.GardenerClusterKubeconfig {
	t.Helper()
	out, err := s.GardenerClusterKubeconfig.Get(registrytest.Context(ns), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return out.(*clustergate.GardenerClusterKubeconfig)
}

func update(r rest.Updater, k *clustergate.GardenerClusterKubeconfig) (*clustergate.GardenerClusterKubeconfig, error) {
	out, _, err := r.Update(registrytest.Context(ns), k.Name, rest.DefaultUpdatedObjectInfo(k), rest.ValidateAllObjectFunc,
		rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return out.(*clustergate.GardenerClusterKubeconfig), nil
}

func TestCreateDefaultsSecretNamespace(t *testing.T) {
	s := newStorage(t)
	in := newKubeconfig("c-123", "c-123")
	in.Status.State = clustergate.KubeconfigStateReady
	s.mustCreate(t, in)
	got := s.mustGet(t, "c-123")
	if got.Spec.Kubeconfig.Secret.Namespace != ns {
		t.Errorf("secret namespace = %q, want the object's %q", got.Spec.Kubeconfig.Secret.Namespace, ns)
	}
	if got.Status.State != "" {
		t.Errorf("status.state from the client was kept: %q", got.Status.State)
	}
}

func TestCreateRejectsSecretInAnotherNamespace(t *testing.T) {
	s := newStorage(t)
	in := newKubeconfig("c-123", "c-123")
	in.Spec.Kubeconfig.Secret.Namespace = "kube-system"
	_, err := s.GardenerClusterKubeconfig.Create(registrytest.Context(ns), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want Invalid", err)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "spec.kubeconfig.secret.namespace" {
		t.Errorf("causes = %+v, want spec.kubeconfig.secret.namespace", causes)
	}
}

func TestSpecUpdateBumpsGeneration(t *testing.T) {
	s := newStorage(t)
	s.mustCreate(t, newKubeconfig("c-123", "c-123"))

	k := s.mustGet(t, "c-123")
	k.Spec.Kubeconfig.Secret.Name = "moved"
	out, err := update(s.GardenerClusterKubeconfig, k)
	if err != nil {
		t.Fatal(err)
	}
	if out.Generation != 2 {
		t.Errorf("generation = %d after a spec change, want 2", out.Generation)
	}

	k = s.mustGet(t, "c-123")
	k.Spec.Shoot.Name = "c-456"
	if _, err := update(s.GardenerClusterKubeconfig, k); !apierrors.IsInvalid(err) {
		t.Fatalf("changing the shoot: got %v, want Invalid", err)
	}
}

func TestStatusUpdateAndStateSelector(t *testing.T) {
	s := newStorage(t)
	s.mustCreate(t, newKubeconfig("ready", "c-1"))
	s.mustCreate(t, newKubeconfig("broken", "c-2"))

	for name, state := range map[string]clustergate.KubeconfigState{"ready": clustergate.KubeconfigStateReady, "broken": clustergate.KubeconfigStateError} {
		k := s.mustGet(t, name)
		k.Spec.Shoot.Name = "ignored"
		k.Status.State = state
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		k.Status.LastSyncTime = &now
		out, err := update(s.Status, k)
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.Shoot.Name == "ignored" {
			t.Errorf("status subresource changed spec.shoot")
		}
	}

	k := s.mustGet(t, "ready")
	k.Status.State = "Pending"
	if _, err := update(s.Status, k); !apierrors.IsInvalid(err) {
		t.Errorf("state Pending: got %v, want Invalid", err)
	}

	tests := []struct {
		field string
		want  []string
	}{
		{field: "status.state=Ready", want: []string{"ready"}},
		{field: "status.state=Error", want: []string{"broken"}},
		{field: "spec.shoot.name=c-2", want: []string{"broken"}},
		{field: "spec.shoot.name!=c-2", want: []string{"ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			sel, err := fields.ParseSelector(tt.field)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.GardenerClusterKubeconfig.List(registrytest.Context(ns), &metainternalversion.ListOptions{LabelSelector: labels.Everything(), FieldSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, item := range out.(*clustergate.GardenerClusterKubeconfigList).Items {
				names = append(names, item.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}

	table, err := s.GardenerClusterKubeconfig.ConvertToTable(registrytest.Context(ns), s.mustGet(t, "ready"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"ready", "local/c-1", "kubeconfig-ready", "Ready"}, table.Rows[0].Cells[:4]); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}
