// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e tests clustergate as users meet it: registered with a real
// kube-apiserver through an APIService, next to a real gardener-apiserver and
// a shoot kube-apiserver, driven with kubectl. All tests share one control
// plane, started by TestMain from the binaries `make test-e2e` builds.
//
// Most of a test's time is waiting: for expiries, renewals, and the garden's
// namespace controller, which looks again 8 s after it found Sessions with
// finalizers. Tests that keep to their own namespaces, users in their own
// groups and objects of their own call t.Parallel and run side by side
// (make test-e2e: -parallel=6), after the others, which run alone: those
// that start or stop replicas or components, change what every replica
// reads (event sinks, the Shoot's labels), read counts and metrics that
// other tests move, or cut streams within a second of an expiry.
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

var cp *localcluster.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// go test runs in the package's directory; file names in the binary
	// are module paths (make builds with -trimpath).
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	bin := filepath.Join(root, "_output", "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "gardener-apiserver", "clustergate-apiserver", "kubectl-session"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s is missing: run `make test-e2e`, which builds it\n", b)
			return 1
		}
	}
	lifecycleArgs, accessConfig, err := lifecycleSetup(root, bin, filepath.Join(root, "_output", "e2e-audit"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	start := time.Now()
	cp, err = localcluster.Start(context.Background(), localcluster.Options{
		Dir:      filepath.Join(root, "_output", "e2e"),
		BinDir:   bin,
		RepoRoot: root,
		Logf:     func(format string, args ...any) { fmt.Printf("e2e: "+format+"\n", args...) },
		// Replicas share the garden etcd, so a test can add one.
		SharedEtcd: true,
		// The proxy's log line of each proxied request, which tests read
		// (a replica with a request log logs an ordinary request's at -v=4).
		// No limit of sessions per owner: tests run side by side and share
		// owners (admin, alice); TestSessionLimitPerOwner checks the
		// default limit on the docs' control plane.
		ClustergateArgs:     append(lifecycleArgs, "--vmodule=handler=4", "--session-max-per-owner=0"),
		SessionAccessConfig: accessConfig,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the control plane:", err)
		return 1
	}
	fmt.Printf("e2e: control plane ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	defer cp.Stop()
	defer stopDemo()
	return m.Run()
}

// kubectl runs kubectl as admin and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlAs(t, cp.AdminKubeconfig, args...)
}

func kubectlAs(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), kubeconfig, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// kubectlErr runs kubectl and returns its error, which must not be nil.
func kubectlErr(t *testing.T, kubeconfig string, stdin string, args ...string) string {
	t.Helper()
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := cp.Kubectl(context.Background(), kubeconfig, in, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error; output:\n%s", strings.Join(args, " "), out)
	}
	return err.Error()
}

func apply(t *testing.T, kubeconfig, manifest string, args ...string) {
	t.Helper()
	if _, err := cp.Kubectl(context.Background(), kubeconfig, []byte(manifest), append([]string{"apply", "-f", "-"}, args...)...); err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace for one test and, when the test ends, deletes
// it with everything in it through the garden's namespace controller and
// waits until it is gone: every test also checks that clustergate's
// resources never hold up a namespace's deletion.
func namespace(t *testing.T, name string) string {
	t.Helper()
	return namespaceOn(t, cp, name)
}

// namespaceOn is namespace on another control plane.
func namespaceOn(t *testing.T, plane *localcluster.ControlPlane, name string) string {
	t.Helper()
	kubectlAs(t, plane.AdminKubeconfig, "create", "namespace", name)
	t.Cleanup(func() { deleteNamespaceOn(t, plane, name, namespaceDeletionBound) })
	return name
}

// namespaceDeletionBound is how long the deletion of a test's namespace may
// take. The namespace controller looks again 8 s after it found objects
// with finalizers (half its 15 s estimate, plus 1), so a namespace holding
// Sessions or GardenerClusterKubeconfigs takes one such round at least.
const namespaceDeletionBound = 30 * time.Second

// deleteNamespace deletes a namespace, waits until it is gone and returns
// how long that took; it fails the test if it takes longer than bound.
func deleteNamespace(t *testing.T, name string, bound time.Duration) time.Duration {
	t.Helper()
	return deleteNamespaceOn(t, cp, name, bound)
}

// deleteNamespaceOn is deleteNamespace on another control plane.
func deleteNamespaceOn(t *testing.T, plane *localcluster.ControlPlane, name string, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := plane.Kubectl(context.Background(), plane.AdminKubeconfig, nil,
		"delete", "namespace", name, "--wait", "--timeout="+bound.String())
	took := time.Since(start)
	if err != nil {
		conditions, _ := plane.Kubectl(context.Background(), plane.AdminKubeconfig, nil,
			"get", "namespace", name, "-o", "jsonpath={.status.conditions}")
		t.Errorf("namespace %s not gone within %s: %v: %s\nconditions: %s", name, bound, err, out, conditions)
	}
	return took
}

// grant binds the ClusterRoles to user in namespace ns.
func grant(t *testing.T, ns, user string, clusterRoles ...string) {
	t.Helper()
	grantOn(t, cp, ns, user, clusterRoles...)
}

// grantOn is grant on another control plane.
func grantOn(t *testing.T, plane *localcluster.ControlPlane, ns, user string, clusterRoles ...string) {
	t.Helper()
	for _, role := range clusterRoles {
		kubectlAs(t, plane.AdminKubeconfig, "-n", ns, "create", "rolebinding", user+"-"+strings.TrimPrefix(role, "clustergate:"), "--clusterrole="+role, "--user="+user)
	}
}

func sessionManifest(name, owner string) string {
	ownerLine := ""
	if owner != "" {
		ownerLine = "  owner: {username: " + owner + "}\n"
	}
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: %s
spec:
  ttl: 1h
%s  accessLevel: {group: viewer}
  target: {shoot: {name: local}}
`, name, ownerLine)
}

func userKubeconfig(t *testing.T, name string, groups ...string) string {
	t.Helper()
	path, err := cp.UserKubeconfig(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
