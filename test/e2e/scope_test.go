// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// The shoot's namespaces of the least-privilege test: alice may open the
// level debugger in scopeNamespace only.
const (
	scopeNamespace = "lp-shop"
	otherNamespace = "lp-other"
)

// sessionBindings lists the RoleBindings on the shoot that the server made
// for the session with that UID, as namespace/name.
func sessionBindings(t *testing.T, uid string) []string {
	t.Helper()
	out := kubectlAs(t, cp.ShootKubeconfig, "get", "rolebindings", "-A", "-l", "clustergate.dev/session-uid="+uid,
		"-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
	return strings.Fields(out)
}

// waitNoBindings waits until the session with that UID has no RoleBinding
// left on the shoot, and returns how long that took.
func waitNoBindings(t *testing.T, uid string, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, bound, "the RoleBindings of session "+uid+" gone", func() error {
		if b := sessionBindings(t, uid); len(b) > 0 {
			return fmt.Errorf("left: %v", b)
		}
		return nil
	})
	return time.Since(start)
}

// refusedWith runs kubectl as the user of kubeconfig, which must fail with
// want in its message.
func refusedWith(t *testing.T, kubeconfig, want string, args ...string) {
	t.Helper()
	if msg := kubectlErr(t, kubeconfig, "", args...); !strings.Contains(msg, want) {
		t.Errorf("kubectl %s: %s\nwant a refusal saying %q", strings.Join(args, " "), msg, want)
	}
}

// TestLeastPrivilege: alice, granted the level debugger (pods, their logs
// and exec) on namespace lp-shop of the shoot and nothing else, opens a
// session scoped to it, both to the Shoot and to the same cluster as a
// cluster target; the server binds the level's ClusterRole there for as
// long as the session lives, the proxy refuses what lies outside the scope
// before the target sees it, both ways in, and the deny rules of
// artifacts/examples/session-access.yaml refuse even an unscoped admin.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	_, client := clients(t)
	ns := namespace(t, "least-privilege")
	for _, n := range []string{scopeNamespace, otherNamespace} {
		kubectlAs(t, cp.ShootKubeconfig, "create", "namespace", n)
	}
	standInPodIn(t, scopeNamespace, "app")
	grant(t, ns, "alice", "clustergate:session-user")
	kubectl(t, "-n", ns, "create", "role", "shop-debugger", "--verb=debugger", "--resource=shoots.clustergate.dev",
		"--resource=clusters.clustergate.dev", "--resource-name="+localcluster.Shoot+"/"+scopeNamespace,
		"--resource-name="+localcluster.ShootTargetSecret+"/"+scopeNamespace)
	kubectl(t, "-n", ns, "create", "rolebinding", "alice-shop-debugger", "--role=shop-debugger", "--user=alice")
	alice := userKubeconfig(t, "alice", "sre")

	t.Run("authorization grants the namespace only", func(t *testing.T) {
		refused(t, alice, ns, `may not open "debugger" sessions to namespace `+otherNamespace+` of shoots/local`,
			"open", "shoot/local", "--access", "debugger", "--ttl", "10m", "--namespaces", otherNamespace)
		refused(t, alice, ns, `may not open "viewer" sessions to shoots/local`,
			"open", "shoot/local", "--access", "viewer", "--ttl", "10m")
		refused(t, alice, ns, "spec.scope.namespaces: Required value",
			"open", "shoot/local", "--access", "debugger", "--ttl", "10m")
	})

	kubeconfig := filepath.Join(t.TempDir(), "scoped.kubeconfig")
	mustSession(t, alice, ns, "kubeconfig written", "open", "shoot/local", "--access", "debugger", "--ttl", "1h",
		"--namespaces", scopeNamespace, "--name", "scoped", "--wait", "--kubeconfig-out", kubeconfig)
	scoped := waitSessionReady(t, client, ns, "scoped")
	wantBinding := scopeNamespace + "/clustergate-session." + ns + ".scoped"

	t.Run("the level's role is bound in the scope while the session lives", func(t *testing.T) {
		if b := sessionBindings(t, string(scoped.UID)); len(b) != 1 || b[0] != wantBinding {
			t.Errorf("bindings of the scoped session: %v, want [%s]", b, wantBinding)
		}
		if out := kubectl(t, "-n", ns, "get", "session", "scoped", "-o", "wide"); !strings.Contains(out, scopeNamespace) {
			t.Errorf("the wide table shows no scope:\n%s", out)
		}
	})

	// The data plane's way in: a session of the service account sre, which
	// has the same grant through its data-plane name.
	kubectl(t, "-n", ns, "create", "serviceaccount", "sre")
	sre := localcluster.DataPlaneUserPrefix + "system:serviceaccount:" + ns + ":sre"
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-shop-debugger", "--role=shop-debugger", "--user="+sre)
	apply(t, cp.AdminKubeconfig, fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata: {name: scoped-sre}
spec:
  ttl: 1h
  owner: {username: %q}
  accessLevel: {group: debugger}
  scope: {namespaces: [%s]}
  target: {shoot: {name: local}}
`, sre, scopeNamespace), "-n", ns)
	waitSessionReady(t, client, ns, "scoped-sre")

	scopeRefusal := "is scoped to namespaces " + scopeNamespace + ": clustergate refuses"
	for _, way := range []struct{ name, kubeconfig string }{
		{"aggregated", kubeconfig},
		{"data plane", dataPlaneKubeconfig(t, ns, "scoped-sre", "sre")},
	} {
		t.Run("through the "+way.name+" way in", func(t *testing.T) {
			if out := kubectlAs(t, way.kubeconfig, "-n", scopeNamespace, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/app") {
				t.Errorf("pods of the scope: %q", out)
			}
			if out := kubectlAs(t, way.kubeconfig, "-n", scopeNamespace, "exec", "app", "--", "echo", "in", "scope"); out != "in scope\n" {
				t.Errorf("exec in the scope printed %q", out)
			}
			if out := kubectlAs(t, way.kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); !strings.HasPrefix(out, v1alpha1.SessionUserPrefix) {
				t.Errorf("whoami through the scoped session: %q", out)
			}
			refusedWith(t, way.kubeconfig, scopeRefusal+" a list of pods in namespace default", "-n", "default", "get", "pods")
			refusedWith(t, way.kubeconfig, scopeRefusal+" a list of pods across all namespaces", "get", "pods", "-A")
			refusedWith(t, way.kubeconfig, scopeRefusal+" a create of namespaces", "create", "namespace", "lp-new")
			// The target's RBAC: debugger reads no Secrets, and clustergate
			// had no reason to refuse first.
			msg := kubectlErr(t, way.kubeconfig, "", "-n", scopeNamespace, "get", "secret", "db")
			if !strings.Contains(msg, `cannot get resource "secrets"`) || strings.Contains(msg, "clustergate refuses") {
				t.Errorf("a Secret of the scope: %s\nwant the target's own refusal", msg)
			}
		})
	}

	t.Run("the kubeconfig lands in the scope", func(t *testing.T) {
		if out := kubectlAs(t, kubeconfig, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/app") {
			t.Errorf("pods in the kubeconfig's namespace: %q", out)
		}
	})

	t.Run("a cluster target the same way", func(t *testing.T) {
		target := "cluster/" + localcluster.ShootTargetSecret
		refused(t, alice, ns, `may not open "debugger" sessions to namespace `+otherNamespace,
			"open", target, "--access", "debugger", "--ttl", "10m", "--namespaces", otherNamespace)
		path := filepath.Join(t.TempDir(), "cluster.kubeconfig")
		mustSession(t, alice, ns, "kubeconfig written", "open", target, "--access", "debugger", "--ttl", "1h",
			"--namespaces", scopeNamespace, "--name", "scoped-cluster", "--wait", "--kubeconfig-out", path)
		s := waitSessionReady(t, client, ns, "scoped-cluster")
		if b := sessionBindings(t, string(s.UID)); len(b) != 1 {
			t.Errorf("bindings of the cluster target's session: %v", b)
		}
		if out := kubectlAs(t, path, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/app") {
			t.Errorf("pods of the scope: %q", out)
		}
		refusedWith(t, path, scopeRefusal+" a list of pods in namespace default", "-n", "default", "get", "pods")
		kubectl(t, "-n", ns, "delete", "session", "scoped-cluster", "--wait")
		t.Logf("bindings gone %s after the delete", waitNoBindings(t, string(s.UID), 30*time.Second))
	})

	t.Run("bindings go when the session is deleted", func(t *testing.T) {
		kubectl(t, "-n", ns, "delete", "session", "scoped", "--wait")
		t.Logf("bindings gone %s after the delete", waitNoBindings(t, string(scoped.UID), 30*time.Second))
	})

	t.Run("bindings go when the session expires", func(t *testing.T) {
		mustSession(t, alice, ns, "short", "open", "shoot/local", "--access", "debugger", "--ttl", "10s",
			"--namespaces", scopeNamespace, "--name", "short")
		s := waitSessionReady(t, client, ns, "short")
		if b := sessionBindings(t, string(s.UID)); len(b) != 1 {
			t.Errorf("bindings of the short session: %v", b)
		}
		waitGone(t, client, ns, "short", time.Minute)
		waitNoBindings(t, string(s.UID), 10*time.Second)
	})

	t.Run("a binding left by a crashed replica is swept", func(t *testing.T) {
		// The shoot is a Shoot and a cluster target at once: either sweep
		// may find the binding.
		removed := func() float64 {
			var n float64
			for _, kind := range []string{"shoot", "cluster"} {
				v, _ := metricValue(t, cp.ClustergateURL, `clustergate_session_orphaned_rolebindings_removed_total{target_kind="`+kind+`"}`)
				n += v
			}
			return n
		}
		before := removed()
		apply(t, cp.ShootKubeconfig, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: clustergate-session.gone.crashed
  namespace: %s
  labels: {app.kubernetes.io/managed-by: clustergate, clustergate.dev/session-namespace: gone,
    clustergate.dev/session-name: crashed, clustergate.dev/session-uid: 00000000-0000-0000-0000-000000000000}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "clustergate:session-name:gone/crashed"}]
`, scopeNamespace))
		waitNoBindings(t, "00000000-0000-0000-0000-000000000000", 6*orphanSweep)
		if after := removed(); after != before+1 {
			t.Errorf("orphaned RoleBindings removed: %v, was %v", after, before)
		}
	})

	t.Run("deny rules hold an unscoped admin", func(t *testing.T) {
		_, _, admin, _ := proxySessionWith(t, "least-privilege-admin", "admin", "1h", "admin")
		standInPodIn(t, "kube-system", "etcd-0")
		series := `clustergate_proxy_denied_requests_total{rule="no-secrets-in-kube-system"}`
		before, _ := metricValue(t, cp.ClustergateURL, series)
		for _, tt := range []struct {
			rule string
			args []string
		}{
			{"no-secrets-in-kube-system", []string{"-n", "kube-system", "get", "secrets"}},
			{"no-secrets-in-kube-system", []string{"get", "secrets", "-A"}},
			{"no-exec-in-kube-system", []string{"-n", "kube-system", "exec", "etcd-0", "--", "sh"}},
			{"no-namespace-delete", []string{"delete", "namespace", otherNamespace}},
		} {
			refusedWith(t, admin, "denied by clustergate rule "+tt.rule, tt.args...)
		}
		if after, _ := metricValue(t, cp.ClustergateURL, series); after != before+2 {
			t.Errorf("%s went from %v to %v, want +2", series, before, after)
		}
		// What the rules leave alone, admin still does.
		if out := kubectlAs(t, admin, "-n", "default", "get", "secrets", "-o", "name"); strings.Contains(out, "denied") {
			t.Errorf("secrets of default: %s", out)
		}
		if out := kubectlAs(t, admin, "get", "namespace", otherNamespace, "-o", "name"); out != "namespace/"+otherNamespace+"\n" {
			t.Errorf("the namespace, read: %q", out)
		}
	})
}
