// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	applyv1alpha1 "github.com/clustergate/clustergate/pkg/generated/applyconfiguration/clustergate/v1alpha1"
)

func newSession(name string) *v1alpha1.Session {
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			Owner:       v1alpha1.SessionOwner{Username: "alice"},
			AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
			Target:      v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}},
		},
	}
}

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	sessions := clientset(t).ClustergateV1alpha1().Sessions("lifecycle")

	w, err := sessions.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.owner.username=alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := sessions.Create(ctx, newSession("fix-etcd"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.ExpiresAt == nil || !created.Status.ExpiresAt.Time.Equal(created.CreationTimestamp.Add(time.Hour)) {
		t.Errorf("expiresAt = %v, want creation + 1h (%v)", created.Status.ExpiresAt, created.CreationTimestamp)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*v1alpha1.Session).Name != "fix-etcd" {
			t.Errorf("first event = %s %v, want ADDED fix-etcd", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event for the created session")
	}

	created.Spec.TTL.Duration = 2 * time.Hour
	_, err = sessions.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing spec.ttl: got %v, want 422 Invalid", err)
	}

	list, err := sessions.List(ctx, metav1.ListOptions{FieldSelector: "spec.target.shoot.name=local"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("list by shoot: %d items, want 1", len(list.Items))
	}
	if _, err := sessions.List(ctx, metav1.ListOptions{FieldSelector: "spec.ttl=1h"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: got %v, want 400", err)
	}

	if err := sessions.Delete(ctx, "fix-etcd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Get(ctx, "fix-etcd", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func TestInvalidSessionNamesFields(t *testing.T) {
	s := newSession("bad")
	s.Spec.TTL.Duration = 0
	s.Spec.AccessLevel.Group = "root"
	_, err := clientset(t).ClustergateV1alpha1().Sessions("invalid").Create(context.Background(), s, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	var fields []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	if diff := cmp.Diff([]string{"spec.ttl", "spec.accessLevel.group"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	kubeconfigs := clientset(t).ClustergateV1alpha1().GardenerClusterKubeconfigs("apply")

	apply := applyv1alpha1.GardenerClusterKubeconfig("c-123", "apply").
		WithLabels(map[string]string{"kyma-project.io/runtime-id": "c-123"}).
		WithSpec(applyv1alpha1.GardenerClusterKubeconfigSpec().
			WithShoot(applyv1alpha1.ShootReference().WithName("c-123")).
			WithKubeconfig(applyv1alpha1.KubeconfigTarget().WithSecret(applyv1alpha1.SecretKeyReference().WithName("kubeconfig-c-123"))))
	got, err := kubeconfigs.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "provisioner"})
	if err != nil {
		t.Fatal(err)
	}
	if secret := got.Spec.Kubeconfig.Secret; secret.Namespace != "apply" || secret.Key != "config" {
		t.Errorf("secret = %+v, want namespace and key defaulted", secret)
	}

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	status := applyv1alpha1.GardenerClusterKubeconfig("c-123", "apply").
		WithStatus(applyv1alpha1.GardenerClusterKubeconfigStatus().
			WithState(v1alpha1.KubeconfigStateReady).
			WithLastSyncTime(now).
			WithObservedGeneration(got.Generation))
	got, err = kubeconfigs.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "clustergate-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.KubeconfigStateReady {
		t.Errorf("state = %q after status apply", got.Status.State)
	}

	managers := map[string]string{}
	for _, mf := range got.ManagedFields {
		managers[mf.Manager] = mf.Subresource
	}
	if diff := cmp.Diff(map[string]string{"provisioner": "", "clustergate-controller": "status"}, managers); diff != "" {
		t.Errorf("managedFields managers (-want +got):\n%s", diff)
	}

	// A second apply by the same manager that leaves the labels out removes them.
	got, err = kubeconfigs.Apply(ctx, apply.WithLabels(nil), metav1.ApplyOptions{FieldManager: "provisioner"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.KubeconfigStateReady {
		t.Errorf("an apply to the main resource changed status.state to %q", got.Status.State)
	}
}

func TestOwnerStampedFromCreator(t *testing.T) {
	s := newSession("stamped")
	s.Spec.Owner = v1alpha1.SessionOwner{}
	got, err := clientset(t).ClustergateV1alpha1().Sessions("owner").Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The loopback client is the server's own user, in system:masters.
	if got.Spec.Owner.Username != "system:apiserver" || len(got.Spec.Owner.Groups) == 0 {
		t.Errorf("owner = %+v, want the creator system:apiserver with its groups", got.Spec.Owner)
	}
}

func TestProxyRefusals(t *testing.T) {
	ctx := context.Background()
	sessions := clientset(t).ClustergateV1alpha1().Sessions("proxy")
	notMine := newSession("alices")
	if _, err := sessions.Create(ctx, notMine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := newSession("mine")
	mine.Spec.Owner = v1alpha1.SessionOwner{}
	if _, err := sessions.Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path      string
		code      int
		retryable bool
		message   string
	}{
		{path: "sessions/alices/proxy/api", code: 403, message: "only the session's owner may use its proxy"},
		// Standalone, nothing mints credentials: the session never gets Ready.
		{path: "sessions/mine/proxy/api", code: 503, retryable: true, message: "is not ready"},
		{path: "sessions/mine/kubeconfig", code: 503, retryable: true, message: "--external-url"},
		{path: "sessions/nobody/proxy/api", code: 404, message: "not found"},
	}
	t.Run("a path climbing out of the target's", func(t *testing.T) {
		hc, err := rest.HTTPClientFor(config)
		if err != nil {
			t.Fatal(err)
		}
		// Sent as is: the client does not clean it.
		resp, err := hc.Get(config.Host + "/apis/clustergate.dev/v1alpha1/namespaces/proxy/sessions/mine/proxy/api/../../other/api")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `may not have a \"..\" segment`) {
			t.Errorf("got %d %s, want 400 naming the segment", resp.StatusCode, body)
		}
	})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			// No retries: the test wants to see the Retry-After, not obey it.
			result := client.Get().AbsPath("/apis/clustergate.dev/v1alpha1/namespaces/proxy/" + tt.path).MaxRetries(0).Do(ctx)
			var code int
			result.StatusCode(&code)
			err := result.Error()
			if code != tt.code || err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("got %d %v, want %d with %q", code, err, tt.code, tt.message)
			}
			if _, retry := apierrors.SuggestsClientDelay(err); retry != tt.retryable {
				t.Errorf("retry-after suggested = %v, want %v", retry, tt.retryable)
			}
		})
	}
}
