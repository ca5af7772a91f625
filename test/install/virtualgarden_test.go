// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// TestInstallVirtualGarden installs the virtual-garden layout of
// docs/operations.md ("Installing on a gardener-operator landscape"): the
// server's pods, etcd and Services in the garden with the process node as
// the runtime cluster, and the APIService, a Service whose endpoint is the
// runtime Service, and the RBAC in a virtual garden without nodes, where
// Gardener's API is aggregated. It then uses it as a landscape's users do,
// through the virtual garden's aggregator only: a GardenerClusterKubeconfig
// issued by Gardener and rotated on demand, and a Session of a Shoot used
// with kubectl through sessions/proxy.
func TestInstallVirtualGarden(t *testing.T) {
	began := time.Now()
	cp, install := startGarden(t, "virtual-garden-cluster", true)
	ctx := context.Background()
	runtime := &kube{t: t, ctx: ctx, cp: cp}
	virtual := &kube{t: t, ctx: ctx, cp: cp, kubeconfig: cp.VirtualGardenKubeconfig}
	t.Cleanup(func() {
		if t.Failed() {
			runtime.dump()
			t.Logf("virtual garden:\n%s\n%s", virtual.try("get", "apiservice/v1alpha1.clustergate.dev", "-o", "yaml"),
				virtual.try("-n", ns, "get", "endpointslices,services,leases,events", "-o", "wide"))
		}
	})
	// Short enough to keep a test session brief.
	install.ServerArgs = []string{"--session-min-ttl=10s"}
	if err := cp.InstallVirtualGarden(ctx, install); err != nil {
		t.Fatal(err)
	}
	t.Logf("the virtual-garden layout is Available %s after the start", time.Since(began).Round(time.Second))
	checkSplit(t, runtime, virtual)

	virtual.run("create", "namespace", "install")
	virtual.runIn(`apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata:
  name: stored
  namespace: install
spec:
  shoot: {name: local}
  kubeconfig: {secret: {name: kubeconfig-local}}
`, "create", "-f", "-")
	// Gardener of the virtual garden issues it; the Secret is written there.
	out := virtual.try("-n", "install", "wait", "--for=jsonpath={.status.state}=Ready", "gardenerclusterkubeconfig/stored", "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("GardenerClusterKubeconfig not Ready: %s\n%s", out, virtual.try("-n", "install", "get", "gck", "stored", "-o", "yaml"))
	}
	t.Logf("forced rotation in the virtual garden: new kubeconfig in the Secret %s after the annotation",
		forceRotation(t, virtual, "install", "stored", "kubeconfig-local").Round(100*time.Millisecond))

	// A Session of Gardener's Shoot local, its viewer credentials from
	// shoots/viewerkubeconfig of the virtual garden.
	session, _ := openSessionOf(t, virtual, "install", "shoot", `apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: shoot
  namespace: install
spec:
  ttl: 1h
  accessLevel: {group: viewer}
  target: {shoot: {name: local}}
`)
	cfg, err := clientcmd.LoadFromFile(session)
	if err != nil {
		t.Fatal(err)
	}
	if server := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server; !strings.HasPrefix(server, cp.VirtualGardenURL+"/apis/clustergate.dev/") {
		t.Errorf("the session kubeconfig leads to %s, not through the virtual garden %s", server, cp.VirtualGardenURL)
	}
	// The Shoot's one node, through the virtual garden's aggregator, the
	// runtime Service and sessions/proxy; the virtual garden has none.
	if got := virtual.as(session, "get", "nodes", "-o", "name"); got != "node/stand-in" {
		t.Errorf("nodes of the Shoot through sessions/proxy: %q", got)
	}
	if out, err := cp.Kubectl(ctx, session, nil, "-n", "kube-system", "get", "secrets"); err == nil || !strings.Contains(string(out)+err.Error(), "forbidden") {
		t.Errorf("a viewer session read Secrets of the Shoot: %s %v", out, err)
	}
	t.Logf("the virtual-garden layout took %s", time.Since(began).Round(time.Second))
}

// checkSplit checks that each cluster holds its half of the layout: the
// runtime cluster the pods and no APIService or RBAC of clustergate, the
// virtual garden no nodes and no pods but the APIService, the RBAC, and
// what the server writes (its Lease).
func checkSplit(t *testing.T, runtime, virtual *kube) {
	t.Helper()
	for _, obj := range []string{"apiservice/v1alpha1.clustergate.dev", "clusterrole/clustergate:server", "clusterrolebinding/clustergate:system:auth-delegator"} {
		if out := runtime.try("get", obj, "-o", "name"); !strings.Contains(out, "NotFound") {
			t.Errorf("the runtime cluster holds %s: %s", obj, out)
		}
		if got := virtual.run("get", obj, "-o", "name"); !strings.HasSuffix(got, obj[strings.Index(obj, "/"):]) {
			t.Errorf("the virtual garden lacks %s: %q", obj, got)
		}
	}
	if got := virtual.run("get", "nodes,pods", "-A", "-o", "name"); got != "" {
		t.Errorf("the virtual garden runs %q", got)
	}
	if got := runtime.run("-n", ns, "get", "pods", "-l", serverSelector, "-o", "name"); len(strings.Fields(got)) != 2 {
		t.Errorf("server pods in the runtime cluster: %q", got)
	}
	// The controllers' leader holds its Lease where the server's
	// --kubeconfig leads: in the virtual garden.
	e2echeck.Eventually(t, time.Minute, "the server's Lease in the virtual garden", func() error {
		if got := virtual.try("-n", ns, "get", "leases", "-o", "jsonpath={.items[*].spec.holderIdentity}"); strings.TrimSpace(got) == "" {
			return fmt.Errorf("no Lease held: %q", got)
		}
		return nil
	})
	if got := runtime.run("-n", ns, "get", "leases", "-o", "name"); got != "" {
		t.Errorf("Leases in the runtime cluster: %s", got)
	}
}
