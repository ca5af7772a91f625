// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// clients reach the garden as admin: core resources and clustergate's
// through the aggregator.
func clients(t *testing.T) (kubernetes.Interface, versioned.Interface) {
	t.Helper()
	cfg := restConfig(t, cp.AdminKubeconfig)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, client
}

// eventually retries f until it succeeds or timeout passes.
var eventually = e2echeck.Eventually

func newKubeconfigObject(name, shoot, secret string) *v1alpha1.GardenerClusterKubeconfig {
	return &v1alpha1.GardenerClusterKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kyma-project.io/runtime-id": name}},
		Spec: v1alpha1.GardenerClusterKubeconfigSpec{
			Shoot:      v1alpha1.ShootReference{Name: shoot},
			Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: secret}},
		},
	}
}

// waitCondition waits until the object's KubeconfigReady condition has the
// given reason and returns the object.
func waitCondition(t *testing.T, client versioned.Interface, ns, name, reason string, timeout time.Duration) *v1alpha1.GardenerClusterKubeconfig {
	t.Helper()
	var obj *v1alpha1.GardenerClusterKubeconfig
	eventually(t, timeout, fmt.Sprintf("%s/%s KubeconfigReady reason %s", ns, name, reason), func() error {
		var err error
		obj, err = client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.KubeconfigConditionReady)
		if c == nil || c.Reason != reason {
			return fmt.Errorf("status %+v", obj.Status)
		}
		return nil
	})
	return obj
}

// certSerial returns the serial number of the client certificate in the
// kubeconfig of a Secret.
func certSerial(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	return e2echeck.CertSerial(t, s.Data["config"])
}

func getSecret(t *testing.T, kube kubernetes.Interface, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// watchSecretNeverEmpty watches a Secret and records a failure whenever it
// is seen without its kubeconfig; the returned function stops watching.
func watchSecretNeverEmpty(t *testing.T, kube kubernetes.Interface, ns, name string) func() {
	t.Helper()
	w, err := kube.CoreV1().Secrets(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*corev1.Secret); ok && ev.Type != watch.Deleted && len(s.Data["config"]) == 0 {
				t.Errorf("Secret %s/%s seen without a kubeconfig (%s)", ns, name, ev.Type)
			}
		}
	}()
	return func() { w.Stop(); <-done }
}

func TestKubeconfigLifecycle(t *testing.T) {
	ctx := context.Background()
	kube, client := clients(t)
	ns := namespace(t, "kcp-system")
	objects := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns)

	if _, err := objects.Create(ctx, newKubeconfigObject("c-local", localcluster.Shoot, "kubeconfig-c-local"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := waitCondition(t, client, ns, "c-local", v1alpha1.KubeconfigReasonCreated, time.Minute)
	if obj.Status.State != v1alpha1.KubeconfigStateReady || obj.Status.ExpirationTime == nil || obj.Status.LastSyncTime == nil {
		t.Fatalf("status after create: %+v", obj.Status)
	}

	secret := getSecret(t, kube, ns, "kubeconfig-c-local")
	t.Run("Secret carries Kyma's labels and annotations", func(t *testing.T) {
		for k, want := range map[string]string{
			v1alpha1.LabelManagedBy: "clustergate", v1alpha1.LabelClusterName: "c-local", "kyma-project.io/runtime-id": "c-local",
		} {
			if got := secret.Labels[k]; got != want {
				t.Errorf("label %s = %q, want %q", k, got, want)
			}
		}
		if _, err := time.Parse(time.RFC3339, secret.Annotations[v1alpha1.AnnotationLastSync]); err != nil {
			t.Errorf("last-sync annotation: %v", err)
		}
		if secret.Type != corev1.SecretTypeOpaque {
			t.Errorf("type = %s", secret.Type)
		}
	})

	t.Run("its kubeconfig works against the shoot", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, secret.Data["config"], 0o600); err != nil {
			t.Fatal(err)
		}
		out := kubectlAs(t, path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}")
		if !strings.Contains(out, "gardener.cloud:") {
			t.Errorf("identity on the shoot: %s", out)
		}
		kubectlAs(t, path, "get", "namespaces")
	})

	t.Run("no new kubeconfig without cause", func(t *testing.T) {
		before := getSecret(t, kube, ns, "kubeconfig-c-local").ResourceVersion
		kubectl(t, "-n", ns, "annotate", "gck", "c-local", "note=unrelated")
		time.Sleep(3 * time.Second)
		if after := getSecret(t, kube, ns, "kubeconfig-c-local").ResourceVersion; after != before {
			t.Errorf("the Secret was rewritten (resourceVersion %s → %s) without cause", before, after)
		}
	})

	t.Run("forced rotation on the object", func(t *testing.T) {
		serial := certSerial(t, getSecret(t, kube, ns, "kubeconfig-c-local"))
		stop := watchSecretNeverEmpty(t, kube, ns, "kubeconfig-c-local")
		kubectl(t, "-n", ns, "annotate", "gck", "c-local", v1alpha1.AnnotationForceRotation+"=true")
		waitCondition(t, client, ns, "c-local", v1alpha1.KubeconfigReasonForced, time.Minute)
		eventually(t, 30*time.Second, "force annotation removed from the object", func() error {
			o, err := objects.Get(ctx, "c-local", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if _, ok := o.Annotations[v1alpha1.AnnotationForceRotation]; ok {
				return fmt.Errorf("annotation still there")
			}
			return nil
		})
		stop()
		if got := certSerial(t, getSecret(t, kube, ns, "kubeconfig-c-local")); got == serial {
			t.Errorf("certificate serial unchanged after forced rotation: %s", got)
		}
	})

	t.Run("forced rotation on the Secret", func(t *testing.T) {
		serial := certSerial(t, getSecret(t, kube, ns, "kubeconfig-c-local"))
		stop := watchSecretNeverEmpty(t, kube, ns, "kubeconfig-c-local")
		kubectl(t, "-n", ns, "annotate", "secret", "kubeconfig-c-local", v1alpha1.AnnotationForceRotationShort+"=true")
		eventually(t, time.Minute, "Secret rotated", func() error {
			s := getSecret(t, kube, ns, "kubeconfig-c-local")
			if _, ok := s.Annotations[v1alpha1.AnnotationForceRotationShort]; ok || certSerial(t, s) == serial {
				return fmt.Errorf("not rotated yet")
			}
			return nil
		})
		stop()
	})

	t.Run("deleted Secret is repaired", func(t *testing.T) {
		if err := kube.CoreV1().Secrets(ns).Delete(ctx, "kubeconfig-c-local", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "c-local", v1alpha1.KubeconfigReasonRepaired, time.Minute)
		getSecret(t, kube, ns, "kubeconfig-c-local")
	})

	t.Run("edited Secret is repaired", func(t *testing.T) {
		s := getSecret(t, kube, ns, "kubeconfig-c-local")
		s.Data["config"] = []byte("garbage")
		if _, err := kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "kubeconfig restored", func() error {
			if string(getSecret(t, kube, ns, "kubeconfig-c-local").Data["config"]) == "garbage" {
				return fmt.Errorf("still garbage")
			}
			return nil
		})
	})

	t.Run("server restarted: an intact Secret is not written again", func(t *testing.T) {
		before, err := cp.GardenerKubeconfigRequests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.StopComponent("clustergate"); err != nil {
			t.Fatal(err)
		}
		if err := cp.StartComponent(ctx, "clustergate"); err != nil {
			t.Fatal(err)
		}
		// The restarted controller finds an intact Secret: the forced
		// rotation is its only request to Gardener, no repair before it.
		kubectl(t, "-n", ns, "annotate", "gck", "c-local", v1alpha1.AnnotationForceRotation+"=true")
		waitCondition(t, client, ns, "c-local", v1alpha1.KubeconfigReasonForced, time.Minute)
		// A second request would come right after the first.
		time.Sleep(2 * time.Second)
		after, err := cp.GardenerKubeconfigRequests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after-before != 1 {
			t.Errorf("the forced rotation after a restart made %d kubeconfig requests to Gardener, want 1; reason of the Secret %q",
				after-before, getSecret(t, kube, ns, "kubeconfig-c-local").Annotations[v1alpha1.AnnotationReason])
		}
	})

	t.Run("server restarted: nothing lost", func(t *testing.T) {
		if err := cp.StopComponent("clustergate"); err != nil {
			t.Fatal(err)
		}
		// While the server is down its Secret disappears.
		if err := kube.CoreV1().Secrets(ns).Delete(ctx, "kubeconfig-c-local", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cp.StartComponent(ctx, "clustergate"); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "Secret repaired after restart", func() error {
			_, err := kube.CoreV1().Secrets(ns).Get(ctx, "kubeconfig-c-local", metav1.GetOptions{})
			return err
		})
		waitCondition(t, client, ns, "c-local", v1alpha1.KubeconfigReasonRepaired, time.Minute)
	})

	t.Run("delete removes the Secret", func(t *testing.T) {
		if err := objects.Delete(ctx, "c-local", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "object and Secret gone", func() error {
			if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "kubeconfig-c-local", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Secret: %w", err)
			}
			if _, err := objects.Get(ctx, "c-local", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("object: %w", err)
			}
			return nil
		})
	})
}

func TestKubeconfigErrors(t *testing.T) {
	ctx := context.Background()
	kube, client := clients(t)
	ns := namespace(t, "kcp-errors")
	objects := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns)

	t.Run("foreign Secret untouched and reported", func(t *testing.T) {
		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns}, StringData: map[string]string{"config": "someone else's"}}
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := objects.Create(ctx, newKubeconfigObject("conflict", localcluster.Shoot, "taken"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		obj := waitCondition(t, client, ns, "conflict", v1alpha1.KubeconfigReasonSecretConflict, time.Minute)
		if obj.Status.State != v1alpha1.KubeconfigStateError {
			t.Errorf("state = %s, want Error", obj.Status.State)
		}
		s := getSecret(t, kube, ns, "taken")
		if string(s.Data["config"]) != "someone else's" || s.Labels[v1alpha1.LabelManagedBy] != "" {
			t.Errorf("the foreign Secret was changed: %v %v", s.Labels, string(s.Data["config"]))
		}
		// Deleting the object leaves the foreign Secret alone.
		if err := objects.Delete(ctx, "conflict", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "object released", func() error {
			if _, err := objects.Get(ctx, "conflict", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("object: %w", err)
			}
			return nil
		})
		getSecret(t, kube, ns, "taken")
	})

	t.Run("a conflicting Secret deleted is taken over at once", func(t *testing.T) {
		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wanted", Namespace: ns}, StringData: map[string]string{"config": "someone else's"}}
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := objects.Create(ctx, newKubeconfigObject("waiting", localcluster.Shoot, "wanted"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "waiting", v1alpha1.KubeconfigReasonSecretConflict, time.Minute)
		if err := kube.CoreV1().Secrets(ns).Delete(ctx, "wanted", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The recheck is 5 minutes away: only the watch of the conflicting
		// Secret makes this quick.
		start := time.Now()
		waitCondition(t, client, ns, "waiting", v1alpha1.KubeconfigReasonCreated, 30*time.Second)
		t.Logf("taken over %s after the foreign Secret was deleted", time.Since(start).Round(time.Millisecond))
		if s := getSecret(t, kube, ns, "wanted"); s.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByClustergate {
			t.Errorf("the Secret is not managed now: %v", s.Labels)
		}
	})

	t.Run("Kyma's Secret is adopted", func(t *testing.T) {
		kyma := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-migrated", Namespace: ns, Labels: map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedByKyma, v1alpha1.LabelClusterName: "migrated"}},
			StringData: map[string]string{"config": "kyma's kubeconfig"}}
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, kyma, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := objects.Create(ctx, newKubeconfigObject("migrated", localcluster.Shoot, "kubeconfig-migrated"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "migrated", v1alpha1.KubeconfigReasonAdopted, time.Minute)
		if s := getSecret(t, kube, ns, "kubeconfig-migrated"); s.Labels[v1alpha1.LabelManagedBy] != "clustergate" {
			t.Errorf("adopted Secret labels: %v", s.Labels)
		}
	})

	t.Run("missing shoot reported", func(t *testing.T) {
		if _, err := objects.Create(ctx, newKubeconfigObject("ghost", "no-such-shoot", "kubeconfig-ghost"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		obj := waitCondition(t, client, ns, "ghost", "ShootNotFound", time.Minute)
		if obj.Status.State != v1alpha1.KubeconfigStateError {
			t.Errorf("state = %s, want Error", obj.Status.State)
		}
		if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "kubeconfig-ghost", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Secret was written for a missing shoot: %v", err)
		}
		events := kubectl(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.name=ghost", "-o", "jsonpath={.items[*].reason}")
		if !strings.Contains(events, "ShootNotFound") {
			t.Errorf("no ShootNotFound event: %q", events)
		}
	})

	t.Run("Gardener down, then back", func(t *testing.T) {
		if _, err := objects.Create(ctx, newKubeconfigObject("outage", localcluster.Shoot, "kubeconfig-outage"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "outage", v1alpha1.KubeconfigReasonCreated, time.Minute)
		if err := cp.StopComponent("gardener-apiserver"); err != nil {
			t.Fatal(err)
		}
		kubectl(t, "-n", ns, "annotate", "gck", "outage", v1alpha1.AnnotationForceRotation+"=true")
		waitCondition(t, client, ns, "outage", "GardenerUnavailable", time.Minute)
		if err := cp.StartComponent(ctx, "gardener-apiserver"); err != nil {
			t.Fatal(err)
		}
		obj := waitCondition(t, client, ns, "outage", v1alpha1.KubeconfigReasonForced, 2*time.Minute)
		if obj.Status.State != v1alpha1.KubeconfigStateReady {
			t.Errorf("state = %s after Gardener came back", obj.Status.State)
		}
	})
}
