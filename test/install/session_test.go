// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkSession opens a session to the garden itself, the one cluster the
// installed server's pods reach (as https://kubernetes.default.svc), and
// reads through sessions/proxy with the credentials the server minted.
func checkSession(t *testing.T, k *kube, namespace string) {
	t.Helper()
	// A cluster target: the admin's kubeconfig with the address pods
	// reach the garden at; the server mints session certificates with it.
	raw := k.run("config", "view", "--raw", "--minify", "--flatten")
	target := regexp.MustCompile(`(?m)^(\s*server:).*$`).ReplaceAllString(raw, "$1 https://kubernetes.default.svc")
	f, err := os.CreateTemp(t.TempDir(), "target")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(target); err != nil {
		t.Fatal(err)
	}
	f.Close()
	k.run("-n", ns, "create", "secret", "generic", "garden-target", "--from-file=kubeconfig="+f.Name())
	k.run("-n", ns, "label", "secret", "garden-target", "clustergate.dev/cluster-target=true")
	// The access level "viewer" is the group of the minted certificate;
	// the target grants it what "view" holds.
	k.run("create", "clusterrolebinding", "clustergate-viewer", "--clusterrole=view", "--group=viewer")

	created := time.Now()
	k.runIn(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: first
  namespace: `+namespace+`
spec:
  ttl: 1h
  accessLevel: {group: viewer}
  target: {cluster: {kubeconfigSecretRef: {name: garden-target}}}
`, "create", "-f", "-")
	out := k.try("-n", namespace, "wait", "--for=condition=Ready", "session/first", "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("session not Ready: %s\n%s", out, k.try("-n", namespace, "get", "session", "first", "-o", "yaml"))
	}
	t.Logf("session Ready %s after create", time.Since(created).Round(100*time.Millisecond))
	got := k.run("get", "--raw", "/apis/clustergate.dev/v1alpha1/namespaces/"+namespace+"/sessions/first/proxy/api/v1/namespaces/"+namespace+"/configmaps")
	if !strings.Contains(got, "kube-root-ca.crt") {
		t.Errorf("configmaps through sessions/proxy: %s", got)
	}
}
