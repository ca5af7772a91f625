// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/gardenerclusterkubeconfigs"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// crd serves the same objects as Sessions from kube-apiserver itself.
const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: benchsessions.bench.clustergate.dev}
spec:
  group: bench.clustergate.dev
  scope: Namespaced
  names: {plural: benchsessions, singular: benchsession, kind: BenchSession}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// sessionBody is the part a Session and its CRD copy share: a cluster
// target whose kubeconfig Secret does not exist, so that the server only
// writes the status saying so.
const sessionBody = `spec:
  ttl: 24h
  accessLevel: {group: viewer}
  target: {cluster: {kubeconfigSecretRef: {name: missing}}}
`

func sessionObject(i int) string {
	return fmt.Sprintf("apiVersion: clustergate.dev/v1alpha1\nkind: Session\nmetadata: {name: s-%05d}\n%s", i, sessionBody)
}

func crdObject(i int) string {
	return fmt.Sprintf("apiVersion: bench.clustergate.dev/v1\nkind: BenchSession\nmetadata: {name: s-%05d}\n%s", i, sessionBody)
}

// timedCreate writes objects from to to into one file and times kubectl
// create -f.
func timedCreate(ctx context.Context, cp *localcluster.ControlPlane, dir, name string, from, to int, object func(int) string) (time.Duration, error) {
	var manifest bytes.Buffer
	for i := from; i < to; i++ {
		manifest.WriteString("---\n")
		manifest.WriteString(object(i))
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, manifest.Bytes(), 0o600); err != nil {
		return 0, err
	}
	start := time.Now()
	if out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "create", "-n", namespace, "-f", path, "-o", "name"); err != nil {
		return 0, fmt.Errorf("kubectl create -f %s: %w: %.2000s", path, err, out)
	}
	return time.Since(start), nil
}

// createKubeconfigs creates n GardenerClusterKubeconfigs whose Secrets
// already hold a valid kubeconfig written by clustergate, so that they cost
// the controller a status write and no Gardener request: at Gardener's pace
// the writes would take far longer than the rest of the benchmark.
func createKubeconfigs(ctx context.Context, cfg *rest.Config, kubeconfigPath string, n int) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// A real kubeconfig with a client certificate and key, as Gardener's are.
	kubeconfigData, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	return parallel(n, func(i int) error {
		name := fmt.Sprintf("c-%05d", i)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-" + name, Namespace: namespace,
				Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: name},
				Annotations: map[string]string{
					v1alpha1.AnnotationChecksum:  gardenerclusterkubeconfigs.Checksum(kubeconfigData),
					v1alpha1.AnnotationLastSync:  now.Format(time.RFC3339),
					v1alpha1.AnnotationExpiresAt: now.Add(24 * time.Hour).Format(time.RFC3339),
					v1alpha1.AnnotationReason:    v1alpha1.KubeconfigReasonCreated,
				}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"config": kubeconfigData},
		}
		if _, err := kube.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(namespace).Create(ctx, &v1alpha1.GardenerClusterKubeconfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GardenerClusterKubeconfigSpec{
				Shoot:      v1alpha1.ShootReference{Name: localcluster.Shoot},
				Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: secret.Name}},
			},
		}, metav1.CreateOptions{})
		return err
	})
}

// writeTrickle writes n times, one every interval, an annotation of one
// Session and of one GardenerClusterKubeconfig (different objects each
// time): a trickle of writes such as any control plane sees.
func writeTrickle(ctx context.Context, cfg *rest.Config, n int, interval time.Duration) error {
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for i := range n {
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"bench.clustergate.dev/write":"%d"}}}`, i))
		if _, err := client.ClustergateV1alpha1().Sessions(namespace).Patch(ctx, fmt.Sprintf("s-%05d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
		if _, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(namespace).Patch(ctx, fmt.Sprintf("c-%05d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
		time.Sleep(interval)
	}
	return nil
}

// parallel runs f for 0..n-1 on 16 goroutines and returns the first error.
func parallel(n int, f func(int) error) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// waitSettled waits until every Session has its Ready condition and every
// GardenerClusterKubeconfig is Ready: the controllers have written all.
func waitSettled(ctx context.Context, cfg *rest.Config, n int) error {
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(n)*100*time.Millisecond + 5*time.Minute)
	for time.Now().Before(deadline) {
		sessions, err := client.ClustergateV1alpha1().Sessions(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		kubeconfigs, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		settled := 0
		for _, s := range sessions.Items {
			if meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady) != nil {
				settled++
			}
		}
		for _, k := range kubeconfigs.Items {
			if k.Status.State == v1alpha1.KubeconfigStateReady {
				settled++
			}
		}
		if settled == 2*n {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("not every object settled within the deadline")
}
