// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// projectSessionManifest is an admin session to Shoot prod of project, or
// of the default project when project is empty.
func projectSessionManifest(name, project string) string {
	target := "{shoot: {name: prod}}"
	if project != "" {
		target = fmt.Sprintf("{shoot: {name: prod, project: %s}}", project)
	}
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: %s
spec:
  ttl: 1h
  accessLevel: {group: admin}
  target: %s
`, name, target)
}

// TestShootsOfTwoProjects: Shoots named prod in projects shop and pay are
// two targets. A grant in a project's namespace (where Gardener binds its
// members) reaches that project's prod and not the other's: alice, granted
// in garden-shop, reaches shop/prod through the proxy and is refused
// pay/prod; bob, granted in garden-pay, the other way round. A session in
// a project's namespace that names no project is of that project, and the
// TARGET column shows the project. A GardenerClusterKubeconfig keeps the
// kubeconfig of pay's prod, which Gardener issued in garden-pay.
func TestShootsOfTwoProjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, project := range []string{"shop", "pay"} {
		if err := cp.AddShoot(ctx, project, "prod"); err != nil {
			t.Fatal(err)
		}
	}
	kube, client := clients(t)
	ns := namespace(t, "projects")
	// Each is a member of one project: target-admin in its namespace.
	members := map[string]string{"alice": "shop", "bob": "pay"}
	for user, project := range members {
		grant(t, ns, user, "clustergate:session-user")
		grant(t, "garden-"+project, user, "clustergate:session-user", "clustergate:target-admin")
		t.Cleanup(func() {
			kubectl(t, "-n", "garden-"+project, "delete", "rolebinding", user+"-session-user", user+"-target-admin", "--wait")
		})
	}

	for user, project := range members {
		other := map[string]string{"shop": "pay", "pay": "shop"}[project]
		t.Run(user, func(t *testing.T) {
			kc := userKubeconfig(t, user)
			name := user + "-" + project
			apply(t, kc, projectSessionManifest(name, project), "-n", ns)
			s := waitSessionReady(t, client, ns, name)
			if got := s.Spec.Target.Shoot.Project; got != project {
				t.Errorf("stored with project %q, want %q", got, project)
			}
			out := kubectlAs(t, kc, "get", "--raw", fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/%s/proxy/api/v1/namespaces/default", ns, name))
			if !strings.Contains(out, `"name":"default"`) {
				t.Errorf("the Shoot through the proxy answered %s", out)
			}
			if out := kubectlAs(t, kc, "-n", ns, "get", "session", name); !strings.Contains(out, "shoot/"+project+"/prod") {
				t.Errorf("the TARGET column does not show shoot/%s/prod:\n%s", project, out)
			}

			msg := kubectlErr(t, kc, projectSessionManifest(user+"-"+other, other), "-n", ns, "apply", "-f", "-")
			want := fmt.Sprintf(`may not open "admin" sessions to shoots/%s/prod in namespace %s: that needs the verb "admin" on shoots.clustergate.dev named "prod" in namespace garden-%s`, other, ns, other)
			if !strings.Contains(msg, want) {
				t.Errorf("refusal of %s/prod:\n%s\nwant it to say %s", other, msg, want)
			}
			// Nor from within one's own project's namespace.
			msg = kubectlErr(t, kc, projectSessionManifest(user+"-"+other, other), "-n", "garden-"+project, "apply", "-f", "-")
			if !strings.Contains(msg, "in namespace garden-"+other) {
				t.Errorf("refusal of %s/prod from garden-%s:\n%s", other, project, msg)
			}
		})
	}

	t.Run("a session in a project's namespace is of that project", func(t *testing.T) {
		alice := userKubeconfig(t, "alice")
		apply(t, alice, projectSessionManifest("in-shop", ""), "-n", "garden-shop")
		t.Cleanup(func() { kubectl(t, "-n", "garden-shop", "delete", "session", "in-shop", "--wait", "--timeout=30s") })
		s := waitSessionReady(t, client, "garden-shop", "in-shop")
		if got := s.Spec.Target.Shoot.Project; got != "shop" {
			t.Errorf("stored with project %q, want shop", got)
		}
	})

	t.Run("a kept kubeconfig of the other project's Shoot", func(t *testing.T) {
		k := newKubeconfigObject("pay-prod", "prod", "kubeconfig-pay-prod")
		k.Spec.Shoot.Project = "pay"
		if _, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).Create(ctx, k, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "pay-prod", v1alpha1.KubeconfigReasonCreated, time.Minute)
		if out := kubectl(t, "-n", ns, "get", "gck", "pay-prod"); !strings.Contains(out, "pay/prod") {
			t.Errorf("the SHOOT column does not show pay/prod:\n%s", out)
		}
		// Gardener names the kubeconfig's user <project namespace>--<shoot>.
		secret := getSecret(t, kube, ns, "kubeconfig-pay-prod")
		if kc := string(secret.Data["config"]); !strings.Contains(kc, "garden-pay--prod") {
			t.Errorf("the kept kubeconfig is not Gardener's for garden-pay/prod")
		}
	})
}
