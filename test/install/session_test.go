// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// gardenTarget registers the garden itself as the cluster target
// garden-target, the one cluster the installed server's pods reach (as
// https://kubernetes.default.svc), and grants the sessions' access groups
// what they may do there: "viewer" what view holds, "admin" exec into the
// etcd members (the break-glass case: fix etcd).
func gardenTarget(t *testing.T, k *kube) {
	t.Helper()
	// The admin's kubeconfig with the address pods reach the garden at;
	// the server mints session certificates with it.
	raw := k.run("config", "view", "--raw", "--minify", "--flatten")
	target := regexp.MustCompile(`(?m)^(\s*server:).*$`).ReplaceAllString(raw, "$1 https://kubernetes.default.svc")
	f := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(f, []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	k.run("-n", ns, "create", "secret", "generic", "garden-target", "--from-file=kubeconfig="+f)
	k.run("-n", ns, "label", "secret", "garden-target", "clustergate.dev/cluster-target=true")
	// The access level is the group of the minted certificate.
	k.run("create", "clusterrolebinding", "clustergate-viewer", "--clusterrole=view", "--group=viewer")
	k.run("-n", ns, "create", "role", "etcd-exec", "--verb=get,create", "--resource=pods,pods/exec")
	k.run("-n", ns, "create", "rolebinding", "clustergate-admin-etcd-exec", "--role=etcd-exec", "--group=admin")
}

// openSession creates a Session of the garden target owned by the admin,
// waits until it is Ready and returns the path of its kubeconfig (the
// aggregated sessions/proxy URL with the admin's client certificate) and
// its expiresAt.
func openSession(t *testing.T, k *kube, namespace, name, group, ttl string) (string, time.Time) {
	t.Helper()
	return openSessionOf(t, k, namespace, name, sessionManifest(namespace, name, group, ttl))
}

// openSessionOf is openSession of the Session manifest, namespace/name.
func openSessionOf(t *testing.T, k *kube, namespace, name, manifest string) (string, time.Time) {
	t.Helper()
	created := time.Now()
	k.runIn(manifest, "create", "-f", "-")
	out := k.try("-n", namespace, "wait", "--for=condition=Ready", "session/"+name, "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("session %s not Ready: %s\n%s", name, out, k.try("-n", namespace, "get", "session", name, "-o", "yaml"))
	}
	t.Logf("session %s Ready %s after create", name, time.Since(created).Round(100*time.Millisecond))
	expires, err := time.Parse(time.RFC3339, k.run("-n", namespace, "get", "session", name, "-o", "jsonpath={.status.expiresAt}"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := k.cp.SessionKubeconfig(k.ctx, k.admin(), namespace, name, path); err != nil {
		t.Fatal(err)
	}
	return path, expires
}

// sessionManifest is a Session of the garden target.
func sessionManifest(namespace, name, group, ttl string) string {
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: %s
  namespace: %s
spec:
  ttl: %s
  accessLevel: {group: %s}
  target: {cluster: {kubeconfigSecretRef: {name: garden-target}}}
`, name, namespace, ttl, group)
}

// checkSession reads through sessions/proxy with the credentials the
// server minted.
func checkSession(t *testing.T, k *kube, namespace string) {
	t.Helper()
	session, _ := openSession(t, k, namespace, "first", "viewer", "1h")
	got := k.as(session, "get", "configmaps", "-n", namespace, "-o", "name")
	if !strings.Contains(got, "configmap/kube-root-ca.crt") {
		t.Errorf("configmaps through sessions/proxy: %s", got)
	}
}

// checkExec runs kubectl exec through sessions/proxy into an etcd member,
// a pod of the process node, which runs the command in the container's
// namespaces (nsenter): etcdctl of the etcd image, which has no shell.
func checkExec(t *testing.T, k *kube, namespace string) {
	t.Helper()
	session, _ := openSession(t, k, namespace, "fix-etcd", "admin", "1h")
	if out := k.as(session, "-n", ns, "exec", "clustergate-etcd-0", "--", "etcdctl", "version"); !strings.Contains(out, "etcdctl version: 3.7.3") {
		t.Errorf("exec etcdctl version through the session: %q", out)
	}
	out, err := k.cp.Kubectl(k.ctx, session, nil, "-n", ns, "exec", "clustergate-etcd-0", "--", "sh", "-c", "true")
	if err == nil || !strings.Contains(string(out)+err.Error(), "exit code 127") {
		t.Errorf("exec of a shell the image lacks: %s %v", out, err)
	}
	// The viewer session of the same owner may not exec.
	viewer := filepath.Join(t.TempDir(), "first.kubeconfig")
	if err := k.cp.SessionKubeconfig(k.ctx, k.cp.AdminKubeconfig, namespace, "first", viewer); err != nil {
		t.Fatal(err)
	}
	if out, err := k.cp.Kubectl(k.ctx, viewer, nil, "-n", ns, "exec", "clustergate-etcd-0", "--", "etcdctl", "version"); err == nil || !strings.Contains(string(out)+err.Error(), "forbidden") {
		t.Errorf("exec through a viewer session: %s %v", out, err)
	}
}

// startExpiry opens a watch through sessions/proxy of a session that
// expires in 15 s; the returned function waits for its end and checks
// that every replica cut it at expiresAt with a Status saying why.
func startExpiry(t *testing.T, k *kube, namespace string) func() {
	t.Helper()
	session, expires := openSession(t, k, namespace, "brief", "viewer", "15s")
	cfg, err := clientcmd.BuildConfigFromFlags("", session)
	if err != nil {
		t.Fatal(err)
	}
	ended := e2echeck.WatchUntilEnd(t, cfg)
	return func() {
		t.Helper()
		select {
		case last := <-ended:
			late := time.Since(expires)
			t.Logf("the watch through sessions/proxy ended %s after expiresAt", late.Round(10*time.Millisecond))
			if late > time.Second || late < -time.Second {
				t.Errorf("the watch ended %s after expiresAt, want within 1s", late)
			}
			if !strings.Contains(last, "expired") || !strings.Contains(last, `"kind":"Status"`) {
				t.Errorf("last line of the watch %q is no Status saying the session expired", last)
			}
		case <-time.After(time.Until(expires) + 15*time.Second):
			t.Fatal("the watch outlived the session")
		}
		if out, err := k.cp.Kubectl(k.ctx, session, nil, "get", "configmaps"); err == nil {
			t.Errorf("the expired session still answers: %s", out)
		}
	}
}
