// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// kube runs kubectl as the garden's admin and fails the test on errors.
type kube struct {
	t   *testing.T
	ctx context.Context
	cp  *localcluster.ControlPlane
	// kubeconfig is the admin's of another cluster than the garden, such
	// as the virtual garden; empty is the garden's.
	kubeconfig string
	// dumped says dump ran: once is enough.
	dumped bool
}

// gardenKube is the garden's kube of test t, which dumps what the install
// left when t fails.
func gardenKube(t *testing.T, cp *localcluster.ControlPlane) *kube {
	k := &kube{t: t, ctx: context.Background(), cp: cp}
	t.Cleanup(func() {
		if t.Failed() && !k.dumped {
			k.dump()
		}
	})
	return k
}

// run runs kubectl with args and returns its output.
func (k *kube) run(args ...string) string {
	k.t.Helper()
	return k.runIn("", args...)
}

// runIn runs kubectl with stdin.
func (k *kube) runIn(stdin string, args ...string) string {
	k.t.Helper()
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := k.cp.Kubectl(k.ctx, k.admin(), in, args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// admin is the admin's kubeconfig of k's cluster.
func (k *kube) admin() string {
	if k.kubeconfig != "" {
		return k.kubeconfig
	}
	return k.cp.AdminKubeconfig
}

// as runs kubectl with another kubeconfig and returns its output.
func (k *kube) as(kubeconfig string, args ...string) string {
	k.t.Helper()
	out, err := k.cp.Kubectl(k.ctx, kubeconfig, nil, args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// try runs kubectl and returns output or error text, never failing.
func (k *kube) try(args ...string) string {
	out, err := k.cp.Kubectl(k.ctx, k.admin(), nil, args...)
	if err != nil {
		return string(out) + err.Error()
	}
	return string(out)
}

// servingCA is the path of a file with the CA of the server's serving
// certificate, for clients that reach a server pod past the aggregator.
func (k *kube) servingCA() string {
	k.t.Helper()
	ca := filepath.Join(k.t.TempDir(), "serving-ca.crt")
	data := k.run("-n", "clustergate-system", "get", "secret", "clustergate-serving-cert", "-o", `jsonpath={.data.ca\.crt}`)
	if err := os.WriteFile(ca, []byte(mustBase64(k.t, data)), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return ca
}

// gardenerRequests is the number of kubeconfigs Gardener has handed out.
func (k *kube) gardenerRequests() int {
	k.t.Helper()
	n, err := k.cp.GardenerKubeconfigRequests(k.ctx)
	if err != nil {
		k.t.Fatal(err)
	}
	return n
}

// dump logs what a failed install left: the objects, events and each
// pod's logs, so that a failure in CI says why without a rerun.
func (k *kube) dump() {
	k.dumped = true
	k.t.Logf("component logs in %s", k.cp.LogDir())
	k.t.Logf("objects:\n%s", k.try("-n", "clustergate-system", "get", "pods,pvc,certificates,certificaterequests,statefulsets,deployments,endpointslices,jobs", "-o", "wide"))
	k.t.Logf("apiservice:\n%s", k.try("get", "apiservice", "v1alpha1.clustergate.dev", "-o", "yaml"))
	k.t.Logf("events:\n%s", k.try("-n", "clustergate-system", "get", "events", "--sort-by=.lastTimestamp"))
	for _, pod := range strings.Fields(k.try("-n", "clustergate-system", "get", "pods", "-o", "jsonpath={.items[*].metadata.name}")) {
		k.t.Logf("pod %s:\n%s", pod, k.try("-n", "clustergate-system", "get", "pod", pod, "-o", "jsonpath={.status}"))
		k.t.Logf("logs of %s:\n%s", pod, tail(k.try("-n", "clustergate-system", "logs", pod, "--all-containers"), 40))
		k.t.Logf("previous logs of %s:\n%s", pod, tail(k.try("-n", "clustergate-system", "logs", pod, "--all-containers", "--previous"), 20))
	}
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mustBase64 decodes standard base64.
func mustBase64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
