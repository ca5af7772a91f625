// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// namespaceObjectsEnv sets how many Sessions and how many
// GardenerClusterKubeconfigs TestNamespaceDeletion puts into the namespace
// it deletes (default 4 each); set it to 100 to measure a large namespace.
const namespaceObjectsEnv = "CLUSTERGATE_E2E_NAMESPACE_OBJECTS"

// TestNamespaceDeletion deletes, through the garden's real namespace
// controller, a namespace holding Sessions with live credentials (shoot and
// cluster targets: credentials Secrets, CSRs on the shoot, Istio policies)
// and GardenerClusterKubeconfigs with their Secrets, and checks that it goes
// and takes everything the server made for them along.
func TestNamespaceDeletion(t *testing.T) {
	ctx := context.Background()
	kube, client := clients(t)
	n := 4
	if v := os.Getenv(namespaceObjectsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", namespaceObjectsEnv, v)
		}
	}
	const ns = "doomed"
	kubectl(t, "create", "namespace", ns)

	// Half the sessions reach the shoot through Gardener, half as a cluster
	// through a CSR.
	for i := range n {
		s := &v1alpha1.Session{}
		manifest := sessionManifest(fmt.Sprintf("s-%d", i), "")
		if i%2 == 1 {
			manifest = clusterSessionManifest(fmt.Sprintf("s-%d", i), "1h", "viewer")
		}
		if err := yaml.Unmarshal([]byte(manifest), s); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ClustergateV1alpha1().Sessions(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("c-%d", i)
		if _, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).Create(ctx,
			newKubeconfigObject(name, localcluster.Shoot, "kubeconfig-"+name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var ready []v1alpha1.Session
	eventually(t, time.Duration(n)*time.Second+time.Minute, "every session Ready and every kubeconfig written", func() error {
		list, err := client.ClustergateV1alpha1().Sessions(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range list.Items {
			if !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
				return fmt.Errorf("session %s not Ready: %+v", s.Name, s.Status.Conditions)
			}
		}
		kubeconfigs, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, k := range kubeconfigs.Items {
			if k.Status.State != v1alpha1.KubeconfigStateReady {
				return fmt.Errorf("kubeconfig %s: %+v", k.Name, k.Status)
			}
		}
		ready = list.Items
		return nil
	})

	// What the server made for them, outside the namespace and in it.
	type made struct{ kubeconfig, kind, namespace, name string }
	var everything []made
	for _, s := range ready {
		everything = append(everything,
			made{cp.AdminKubeconfig, "secret", "clustergate-system", credentials.SecretName(s.UID)},
			made{cp.AdminKubeconfig, "authorizationpolicies.security.istio.io", localcluster.PolicyNamespace, sessions.PolicyName(&s)})
		if s.Spec.Target.Cluster != nil {
			everything = append(everything, made{cp.ShootKubeconfig, "certificatesigningrequest", "", credentials.CSRName(s.UID)})
		}
	}
	for i := range n {
		everything = append(everything, made{cp.AdminKubeconfig, "secret", ns, fmt.Sprintf("kubeconfig-c-%d", i)})
	}
	for _, m := range everything {
		args := []string{"get", m.kind, m.name, "-o", "name"}
		if m.namespace != "" {
			args = append(args, "-n", m.namespace)
		}
		kubectlAs(t, m.kubeconfig, args...)
	}

	took := deleteNamespace(t, ns, namespaceDeletionBound+time.Duration(n)*100*time.Millisecond)
	t.Logf("a namespace with %d Sessions and %d GardenerClusterKubeconfigs was gone %s after the delete", n, n, took.Round(100*time.Millisecond))

	for _, m := range everything {
		args := []string{"get", m.kind, m.name, "-o", "name", "--ignore-not-found"}
		if m.namespace != "" {
			args = append(args, "-n", m.namespace)
		}
		if out := kubectlAs(t, m.kubeconfig, args...); out != "" {
			t.Errorf("%s outlived its namespace", strings.TrimSpace(out))
		}
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s: %v, want NotFound", ns, err)
	}

	t.Run("an empty namespace", func(t *testing.T) {
		kubectl(t, "create", "namespace", "empty")
		// Nothing to wait for but the namespace controller, which looks at
		// an updated namespace 5 s later (its namespaceDeletionGracePeriod).
		took := deleteNamespace(t, "empty", 10*time.Second)
		t.Logf("an empty namespace was gone %s after the delete", took.Round(100*time.Millisecond))
	})
}
