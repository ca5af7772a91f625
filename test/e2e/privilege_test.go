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

	"github.com/clustergate/clustergate/internal/localcluster"
)

// secret is a Secret manifest in namespace ns; extra lines go into its
// metadata.
func secret(name, ns, secretType string, metadata ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
%s
type: %s
stringData: {config: x}
`, name, ns, strings.Join(metadata, "\n"), secretType)
}

// TestServerSecretPolicy: the server's service account writes only the
// Opaque Secrets it manages, never service account tokens or annotations
// and never the mark of a cluster target, whatever RBAC lets it do.
func TestServerSecretPolicy(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "policy-secrets")
	as := "--as=" + localcluster.ClustergateServiceAccount
	kubectl(t, "-n", ns, "create", "secret", "generic", "users", "--from-literal=a=b")
	const managed = "  labels: {operator.kyma-project.io/managed-by: clustergate}"
	tests := []struct {
		name     string
		manifest string
		want     string
	}{
		{name: "a kubeconfig Secret it manages", manifest: secret("kept", ns, "Opaque", managed)},
		{name: "session credentials in its own namespace",
			manifest: secret("policy-test-credentials", "clustergate-system", "Opaque", "  labels: {clustergate.dev/session-name: x}")},
		{name: "an unlabelled Secret", manifest: secret("loose", ns, "Opaque"),
			want: "clustergate may only write Secrets labelled operator.kyma-project.io/managed-by=clustergate"},
		{name: "session credentials in another namespace", manifest: secret("creds", ns, "Opaque", "  labels: {clustergate.dev/session-name: x}"),
			want: "or session credentials in its own namespace"},
		{name: "a service account token", want: "clustergate may only write Secrets of type Opaque",
			manifest: secret("token", "kube-system", "kubernetes.io/service-account-token", managed,
				"  annotations: {kubernetes.io/service-account.name: default}")},
		{name: "a service account annotation", want: "clustergate may not write kubernetes.io/service-account.* annotations",
			manifest: secret("annotated", "kube-system", "Opaque", managed, "  annotations: {kubernetes.io/service-account.name: default}")},
		{name: "the mark of a cluster target", want: "cluster target",
			manifest: secret("marked", ns, "Opaque", "  labels: {operator.kyma-project.io/managed-by: clustergate, clustergate.dev/cluster-target: \"true\"}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(tt.manifest), "create", "-f", "-", as)
			wantErr(t, err, tt.want)
			if err == nil {
				// What it wrote, it may delete.
				if _, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(tt.manifest), "delete", "-f", "-", as); err != nil {
					t.Errorf("deleting what it wrote: %v", err)
				}
			}
		})
	}
	t.Run("someone else's Secret", func(t *testing.T) {
		msg := kubectlErr(t, cp.AdminKubeconfig, "", "-n", ns, "delete", "secret", "users", as)
		if !strings.Contains(msg, "clustergate may only change or delete Secrets it manages") {
			t.Errorf("got %s", msg)
		}
	})
}

// TestServerRBAC: what the server's service account may do, as kubectl
// auth can-i tells.
func TestServerRBAC(t *testing.T) {
	as := "--as=" + localcluster.ClustergateServiceAccount
	tests := []struct {
		args []string
		want string
	}{
		// Kubeconfig Secrets in any namespace, narrowed by the policy.
		{[]string{"create", "secrets", "-n", "kube-system"}, "yes"},
		{[]string{"patch", "secrets", "-n", "kube-system"}, "no"},
		{[]string{"create", "serviceaccounts/token", "-n", "kube-system"}, "no"},
		{[]string{"create", "events.events.k8s.io", "-n", "default"}, "yes"},
		{[]string{"create", "events", "-n", "default"}, "no"},
		{[]string{"update", "events.events.k8s.io", "-n", "default"}, "no"},
		{[]string{"update", "resourcequotas", "--subresource=status", "-n", "default"}, "yes"},
		{[]string{"update", "resourcequotas", "-n", "default"}, "no"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "clustergate-system"}, "yes"},
		{[]string{"list", "leases.coordination.k8s.io", "-n", "clustergate-system"}, "no"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "kube-system"}, "no"},
		{[]string{"patch", "authorizationpolicies.security.istio.io", "-n", localcluster.PolicyNamespace}, "yes"},
		{[]string{"watch", "authorizationpolicies.security.istio.io", "-n", localcluster.PolicyNamespace}, "yes"},
		{[]string{"patch", "authorizationpolicies.security.istio.io", "-n", "clustergate-system"}, "no"},
		{[]string{"list", "authorizationpolicies.security.istio.io", "-n", "default"}, "no"},
		{[]string{"create", "certificatesigningrequests.certificates.k8s.io"}, "no"},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, "yes"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if got := canI(t, append(tt.args, as)...); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSecretsPolicyFollowsKustomize installs artifacts/rbac a second time
// with another namespace and name prefix, as an operator's overlay would:
// the policy restricts that installation's service account, and knows its
// own namespace, with nothing edited but the kustomization.
func TestSecretsPolicyFollowsKustomize(t *testing.T) {
	t.Parallel()
	policy, err := os.ReadFile(filepath.Join(cp.RepoRoot(), "artifacts", "rbac", "secrets-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(policy), "clustergate-system") {
		t.Error("the policy names a namespace")
	}
	// Kustomize takes no absolute paths: the overlay lives in the checkout.
	outDir := filepath.Join(cp.RepoRoot(), "_output")
	dir, err := os.MkdirTemp(outDir, "overlay-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	base, err := filepath.Rel(dir, filepath.Join(cp.RepoRoot(), "artifacts", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	// The namespace is the test's: a namespace holding clustergate's
	// objects cannot be deleted until clustergate serves protobuf, which
	// kube-controller-manager's namespace controller asks for.
	ns := namespace(t, "cg-elsewhere")
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(fmt.Sprintf(`namespace: %s
namePrefix: elsewhere-
resources:
- %s
patches:
- patch: |-
    $patch: delete
    apiVersion: v1
    kind: Namespace
    metadata: {name: clustergate-system}
`, ns, base)), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-k", dir)
	t.Cleanup(func() { kubectl(t, "delete", "-k", dir, "--wait") })

	as := "--as=system:serviceaccount:" + ns + ":elsewhere-clustergate"
	credentials := func(ns string) string {
		return secret("elsewhere-credentials", ns, "Opaque", "  labels: {clustergate.dev/session-name: x}")
	}
	// The policy learns of the new binding from its informer.
	eventually(t, 30*time.Second, "the overlay's service account restricted", func() error {
		_, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(credentials("clustergate-system")), "create", "-f", "-", as)
		if err == nil {
			kubectl(t, "-n", "clustergate-system", "delete", "secret", "elsewhere-credentials")
			return fmt.Errorf("it wrote session credentials outside its own namespace")
		}
		if !strings.Contains(err.Error(), "or session credentials in its own namespace") {
			return err
		}
		return nil
	})
	// In its own namespace, it may.
	if _, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(credentials(ns)), "create", "-f", "-", as); err != nil {
		t.Errorf("session credentials in its own namespace: %v", err)
	}
	_, err = cp.Kubectl(context.Background(), cp.AdminKubeconfig,
		[]byte(secret("token", ns, "kubernetes.io/service-account-token", "  labels: {clustergate.dev/session-name: x}",
			"  annotations: {kubernetes.io/service-account.name: default}")), "create", "-f", "-", as)
	wantErr(t, err, "clustergate may only write Secrets of type Opaque")
}
