// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// TestSessionLimitPerOwner: with the default --session-max-per-owner of 5,
// an owner's sixth live session, in whichever namespace, is refused until
// one of the five is gone. On the docs' control plane, which runs make
// run's flags: the suite's own has no limit, for its tests run side by side.
func TestSessionLimitPerOwner(t *testing.T) {
	plane, _ := demoControlPlane(t)
	first, second := namespaceOn(t, plane, "limit-a"), namespaceOn(t, plane, "limit-b")
	for _, ns := range []string{first, second} {
		grantOn(t, plane, ns, "lim", "clustergate:session-user", "clustergate:target-viewer")
	}
	lim, err := plane.UserKubeconfig("lim")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		ns := first
		if i > 3 {
			ns = second
		}
		if err := create(lim, ns, targetSession(fmt.Sprintf("lim-%d", i), "", "viewer", "shoot/"+localcluster.Shoot), false, false); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	const refusal = `user "lim" already has 5 live sessions, the most one owner may have (--session-max-per-owner=5)`
	for _, serverSide := range []bool{false, true} {
		err := create(lim, first, targetSession("lim-6", "", "viewer", "shoot/"+localcluster.Shoot), false, serverSide)
		wantErr(t, err, refusal)
		if err != nil && !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the refusal is no 403: %v", err)
		}
	}
	// Others are not held up by lim's sessions.
	wantErr(t, create(plane.AdminKubeconfig, first, targetSession("admins", "", "viewer", "shoot/"+localcluster.Shoot), false, false), "")

	kubectlAs(t, lim, "-n", second, "delete", "session", "lim-5", "--wait")
	wantErr(t, create(lim, first, targetSession("lim-6", "", "viewer", "shoot/"+localcluster.Shoot), false, false), "")
}

// TestResourceQuota: a ResourceQuota on clustergate's objects is enforced
// at admission, with its usage kept by the garden's kube-controller-manager.
func TestResourceQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube, _ := clients(t)
	ns := namespace(t, "quota")
	const sessions, kubeconfigs = "count/sessions.clustergate.dev", "count/gardenerclusterkubeconfigs.clustergate.dev"
	apply(t, cp.AdminKubeconfig, fmt.Sprintf(`apiVersion: v1
kind: ResourceQuota
metadata: {name: clustergate}
spec:
  hard: {%s: "1", %s: "1"}
`, sessions, kubeconfigs), "-n", ns)
	used := func(resource string) (string, error) {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "clustergate", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		u, ok := q.Status.Used[corev1.ResourceName(resource)]
		if !ok {
			return "", fmt.Errorf("no usage of %s yet: %v", resource, q.Status.Used)
		}
		return u.String(), nil
	}
	waitUsed := func(resource, want string) {
		t.Helper()
		// The controller learns of clustergate's resources from discovery,
		// which it reads every 30 s.
		eventually(t, 2*time.Minute, resource+" used "+want, func() error {
			got, err := used(resource)
			if err == nil && got != want {
				err = fmt.Errorf("used %s", got)
			}
			return err
		})
	}
	waitUsed(sessions, "0")
	waitUsed(kubeconfigs, "0")

	session := func(name string) string { return targetSession(name, "", "viewer", "shoot/"+localcluster.Shoot) }
	wantErr(t, create(cp.AdminKubeconfig, ns, session("first"), false, false), "")
	wantErr(t, create(cp.AdminKubeconfig, ns, session("second"), false, false), "exceeded quota: clustergate, requested: "+sessions+"=1, used: "+sessions+"=1, limited: "+sessions+"=1")
	kubectl(t, "-n", ns, "delete", "session", "first", "--wait")
	// The controller gives the deleted session's place back.
	waitUsed(sessions, "0")
	wantErr(t, create(cp.AdminKubeconfig, ns, session("second"), false, false), "")

	kubeconfig := func(name string) string {
		return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata: {name: %s}
spec:
  shoot: {name: %s}
  kubeconfig: {secret: {name: kubeconfig-%s}}
`, name, localcluster.Shoot, name)
	}
	wantErr(t, create(cp.AdminKubeconfig, ns, kubeconfig("first"), false, false), "")
	wantErr(t, create(cp.AdminKubeconfig, ns, kubeconfig("second"), false, false), "exceeded quota: clustergate, requested: "+kubeconfigs+"=1")
}
