// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/chart"
)

// chartVersion is the version the test publishes the chart as.
const chartVersion = "v0.0.0-install"

// TestInstallHelmChart installs the Helm chart as a landscape does: the
// chart published as make release publishes it (generated from
// artifacts/, the images of make images pinned by digest, pushed to the
// registry as an OCI artifact), installed with helm from that registry
// into a garden with cert-manager, one replica on its embedded etcd,
// until the APIService is Available, then used through sessions/proxy;
// helm uninstall then removes what it installed but the data's claim.
func TestInstallHelmChart(t *testing.T) {
	cp, install := startGarden(t, "helm", false)
	k := gardenKube(t, cp)
	ctx := k.ctx
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "_output", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no helm: run hack/tools/build.sh helm (make test-install does): %v", err)
	}
	registry, _, _ := strings.Cut(install.ServerRef, "/")
	work := t.TempDir()
	published, err := chart.Publish(ctx, bin, "kubectl", filepath.Join(root, "artifacts"), filepath.Join(work, "packaged"),
		work, registry, true, chart.Options{Version: chartVersion, Images: install.Pinned()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chart %s@%s", published.Tag, published.Digest)
	helm := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", cp.AdminKubeconfig)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(work, "helm"), "HELM_CONFIG_HOME="+filepath.Join(work, "helm"),
			"HELM_DATA_HOME="+filepath.Join(work, "helm"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// A landscape's values: one replica, and the flags that let
	// sessions/<name>/kubeconfig say where the garden is (as InstallHA's
	// overlay patches them in).
	values := filepath.Join(work, "values.yaml")
	if err := os.WriteFile(values, []byte(`highAvailability:
  enabled: false
extraArgs:
- --external-url=`+cp.GardenURL+`
- --external-ca-file=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt
`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := helm("install", "clustergate", "oci://"+registry+"/"+chart.Repository+"/clustergate", "--version", strings.TrimPrefix(chartVersion, "v"),
		"--plain-http", "--namespace", ns, "--create-namespace", "--values", values, "--wait", "--timeout", "5m")
	if !strings.Contains(out, "Digest: "+published.Digest) {
		t.Errorf("helm installed another digest than the published %s:\n%s", published.Digest, out)
	}
	if got := k.try("wait", "--for=condition=Available", "apiservice/v1alpha1.clustergate.dev", "--timeout=3m"); !strings.Contains(got, "condition met") {
		t.Fatalf("APIService not Available after helm install: %s", got)
	}
	t.Logf("helm install to an Available APIService: %s", time.Since(start).Round(time.Second))
	if got := k.run("-n", ns, "get", "deployment", "clustergate", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != install.ServerRef[:strings.LastIndex(install.ServerRef, ":")]+"@"+install.ServerDigest {
		t.Errorf("the server runs %s, want the pushed image by digest", got)
	}

	k.run("create", "namespace", "helm")
	gardenTarget(t, k)
	checkSession(t, k, "helm")

	helm("uninstall", "clustergate", "--namespace", ns, "--wait", "--timeout", "3m")
	k.run("wait", "--for=delete", "apiservice/v1alpha1.clustergate.dev", "--timeout=60s")
	k.run("-n", ns, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=clustergate", "--timeout=3m")
	for _, role := range []string{"clustergate:server", "clustergate:session-user"} {
		if out := k.try("get", "clusterrole", role); !strings.Contains(out, "NotFound") {
			t.Errorf("helm uninstall left the ClusterRole %s: %s", role, out)
		}
	}
	// The objects outlive the release: the data's claim stays.
	k.run("-n", ns, "get", "pvc", "clustergate-data")
	k.run("-n", ns, "delete", "pvc", "clustergate-data", "--wait", "--timeout=60s")
}
