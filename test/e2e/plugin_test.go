// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// kubectlSession runs `kubectl session ARGS` as the user of kubeconfig, the
// way a user with the plugin on the PATH would, and returns its stdout and
// stderr and whether it succeeded.
func kubectlSession(t *testing.T, kubeconfig, ns string, args ...string) (string, string, bool) {
	t.Helper()
	// kubectl looks for a plugin in the arguments before the first flag.
	cmd := exec.Command("kubectl", append(append([]string{"session"}, args...), "--kubeconfig", kubeconfig, "-n", ns)...)
	// open --wait writes NAME.kubeconfig, with a private key, into the
	// working directory unless told otherwise: never into the checkout.
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("kubectl session %s: %s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), err == nil
}

// mustSession runs kubectlSession and fails the test unless it succeeds and
// its output says want.
func mustSession(t *testing.T, kubeconfig, ns, want string, args ...string) string {
	t.Helper()
	stdout, stderr, ok := kubectlSession(t, kubeconfig, ns, args...)
	if !ok || !strings.Contains(stdout+stderr, want) {
		t.Fatalf("kubectl session %s: ok %v, output %q%q, want it to say %q", strings.Join(args, " "), ok, stdout, stderr, want)
	}
	return stdout
}

// refused runs kubectlSession and fails the test unless it exits non-zero
// with want, the server's message, on stderr.
func refused(t *testing.T, kubeconfig, ns, want string, args ...string) {
	t.Helper()
	_, stderr, ok := kubectlSession(t, kubeconfig, ns, args...)
	if ok || !strings.Contains(stderr, want) {
		t.Errorf("kubectl session %s: ok %v, stderr %q; want a refusal saying %q", strings.Join(args, " "), ok, stderr, want)
	}
}

// TestPlugin drives the lifecycle with kubectl session as users would: alice
// opens a breakglass session that waits, may not approve it herself though
// an approver, bob approves it, alice fetches its kubeconfig, lists and
// extends it, bob approves the
// extension, bob may not revoke it, alice does; then a viewer session with
// --wait gives a kubeconfig that reaches the target.
func TestPlugin(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "plugin")
	grantBreakglass(t, ns, "alice", "alice", "bob")
	grant(t, ns, "alice", "clustergate:target-viewer")
	alice, bob := userKubeconfig(t, "alice", "sre"), userKubeconfig(t, "bob")
	target := "cluster/" + localcluster.ShootTargetSecret

	out := mustSession(t, alice, ns, "waits for approval", "open", target, "--access", approvalGroup, "--ttl", "1m",
		"--reason", "INC-9 API down", "--name", "bg", "--wait")
	if strings.TrimSpace(out) != "bg" {
		t.Errorf("open printed %q, want the session's name", out)
	}
	refused(t, alice, ns, `"alice" may not approve or deny their own session`, "approve", "bg")
	refused(t, alice, ns, "waits for approval", "kubeconfig", "bg")
	mustSession(t, bob, ns, "opening approved by bob", "approve", "bg", "--reason", "INC-9 is real")
	approved := filepath.Join(t.TempDir(), "bg.kubeconfig")
	mustSession(t, alice, ns, "kubeconfig written to "+approved, "kubeconfig", "bg", "--wait", "--timeout", "1m", "--kubeconfig-out", approved)
	if who := kubectlAs(t, approved, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); !strings.HasPrefix(who, "clustergate:session:") {
		t.Errorf("the approved session's kubeconfig reaches the target as %q", who)
	}
	wide := mustSession(t, alice, ns, "INC-9 API down", "list", "-o", "wide")
	if !strings.Contains(wide, "Approved by bob") {
		t.Errorf("list -o wide lacks the approval:\n%s", wide)
	}
	mustSession(t, alice, ns, "extension by 30s waits for approval", "extend", "bg", "30s")
	mustSession(t, bob, ns, "extension by 30s approved by bob", "approve", "bg")
	refused(t, bob, ns, "forbidden", "revoke", "bg")
	mustSession(t, alice, ns, "session bg revoked", "revoke", "bg")

	kubeconfig := filepath.Join(t.TempDir(), "look.kubeconfig")
	mustSession(t, alice, ns, "kubeconfig written to "+kubeconfig, "open", "shoot/local", "--access", "viewer", "--ttl", "1m",
		"--name", "look", "--wait", "--kubeconfig-out", kubeconfig, "--timeout", time.Minute.String())
	if out := kubectlAs(t, kubeconfig, "get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/default") {
		t.Errorf("the session's kubeconfig does not reach the shoot: %q", out)
	}
	mustSession(t, alice, ns, "session.clustergate.dev/look", "list", "-o", "name")
	refused(t, alice, ns, "waits for no approval", "deny", "look")
	mustSession(t, alice, ns, "1 sessions of alice revoked", "revoke", "--user", "alice")
}
