// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/test/utils/openapicheck"
)

func TestAPIServiceAvailable(t *testing.T) {
	out := kubectl(t, "get", "apiservice", "v1alpha1.clustergate.dev", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	if out != "True" {
		t.Fatalf("APIService Available = %q", out)
	}
}

func TestAPIResources(t *testing.T) {
	out := kubectl(t, "api-resources", "--api-group=clustergate.dev", "--no-headers")
	for _, want := range [][]string{
		{"gardenerclusterkubeconfigs", "gck", "clustergate.dev/v1alpha1", "true", "GardenerClusterKubeconfig"},
		{"sessions", "sess", "clustergate.dev/v1alpha1", "true", "Session"},
		{"sessionlocks", "slock", "clustergate.dev/v1alpha1", "false", "SessionLock"},
	} {
		if !containsLine(out, want) {
			t.Errorf("api-resources lacks %v:\n%s", want, out)
		}
	}
	// The targets of authorization are in discovery, so that kubectl maps
	// them (kubectl auth can-i, create role: TestRBAC, TestTargetAuthorization),
	// without a verb, so that api-resources leaves them out and nothing serves them.
	var discovery struct {
		Resources []struct {
			Name, Kind string
			Verbs      []string
		}
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "--raw", "/apis/clustergate.dev/v1alpha1")), &discovery); err != nil {
		t.Fatal(err)
	}
	virtual := map[string]string{}
	for _, r := range discovery.Resources {
		if len(r.Verbs) == 0 {
			virtual[r.Name] = r.Kind
		}
	}
	if want := map[string]string{"shoots": "Shoot", "clusters": "Cluster"}; !reflect.DeepEqual(virtual, want) {
		t.Errorf("resources without verbs %v, want %v", virtual, want)
	}
	if strings.Contains(out, "Shoot") || strings.Contains(out, "Cluster ") {
		t.Errorf("api-resources lists a virtual resource:\n%s", out)
	}
	// Gardener's shoots still come first for kubectl.
	if got := kubectl(t, "-n", "garden-"+localcluster.Project, "get", "shoots", "-o", "name"); strings.TrimSpace(got) != "shoot.core.gardener.cloud/"+localcluster.Shoot {
		t.Errorf("kubectl get shoots = %q, want Gardener's", got)
	}
	msg := kubectlErr(t, cp.AdminKubeconfig, "", "-n", "default", "get", "shoots.clustergate.dev")
	if !strings.Contains(msg, "the server could not find the requested resource") {
		t.Errorf("listing the virtual shoots: %s", msg)
	}
}

func containsLine(out string, fields []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}

func TestTables(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "tables")
	apply(t, cp.AdminKubeconfig, sessionManifest("fix-etcd", ""), "-n", ns)
	kubectl(t, "-n", ns, "apply", "-f", filepath.Join(cp.RepoRoot(), "artifacts", "examples", "gardenerclusterkubeconfig.yaml"))

	tests := []struct {
		args   []string
		header string
		row    []string
	}{
		{args: []string{"get", "sess"}, header: "NAME OWNER TARGET ACCESS EXPIRES READY AGE",
			row: []string{"fix-etcd", "admin", "shoot/local/local", "viewer"}},
		{args: []string{"get", "gck"}, header: "NAME SHOOT SECRET STATE LAST-SYNC AGE",
			row: []string{"local", "local/local", "kubeconfig-local"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			lines := strings.Split(strings.TrimSpace(kubectl(t, append([]string{"-n", ns}, tt.args...)...)), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != tt.header {
				t.Errorf("header = %q, want %q", got, tt.header)
			}
			if tt.row != nil && (len(lines) < 2 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), strings.Join(tt.row, " "))) {
				t.Errorf("first row %q, want it to start with %v", lines[1:], tt.row)
			}
		})
	}
}

func TestCategory(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "category")
	apply(t, cp.AdminKubeconfig, sessionManifest("fix-etcd", ""), "-n", ns)
	kubectl(t, "-n", ns, "apply", "-f", filepath.Join(cp.RepoRoot(), "artifacts", "examples", "gardenerclusterkubeconfig.yaml"))
	out := kubectl(t, "-n", ns, "get", "clustergate", "-o", "name")
	for _, want := range []string{"session.clustergate.dev/fix-etcd", "gardenerclusterkubeconfig.clustergate.dev/local"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get clustergate lacks %s:\n%s", want, out)
		}
	}
}

func TestExplainAndOpenAPI(t *testing.T) {
	out := kubectl(t, "explain", "session.spec.ttl")
	if !strings.Contains(out, "how long the session lasts") {
		t.Errorf("explain session.spec.ttl:\n%s", out)
	}

	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	raw := kubectl(t, "get", "--raw", "/openapi/v2")
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dev.clustergate.v1alpha1.Session", "dev.clustergate.v1alpha1.GardenerClusterKubeconfig"} {
		if _, ok := doc.Definitions[want]; !ok {
			t.Errorf("merged /openapi/v2 lacks %s", want)
		}
	}
	// The merged document holds every group's models; ours must resolve and
	// none may be named after a Go path.
	problems, err := openapicheck.Problems([]byte(raw), "dev.clustergate.")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestServerSideApply(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "ssa")
	manifest := `apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata:
  name: c-123
  labels: {kyma-project.io/runtime-id: c-123}
spec:
  shoot: {name: c-123}
  kubeconfig: {secret: {name: kubeconfig-c-123}}
`
	apply(t, cp.AdminKubeconfig, manifest, "-n", ns, "--server-side", "--field-manager=provisioner")
	managers := kubectl(t, "-n", ns, "get", "gck", "c-123", "--show-managed-fields",
		"-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`)
	// The controller manages the finalizer and the status alongside.
	if !strings.Contains(managers, "provisioner/Apply/ ") {
		t.Errorf("managedFields = %q, want provisioner's apply", managers)
	}
	secret := kubectl(t, "-n", ns, "get", "gck", "c-123", "-o", "jsonpath={.spec.kubeconfig.secret.namespace}/{.spec.kubeconfig.secret.key}")
	if secret != ns+"/config" {
		t.Errorf("secret namespace/key = %q, want %s/config (defaulted)", secret, ns)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "watch")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	printed := make(chan string, 1)
	go func() {
		// kubectl's output is collected until it is stopped below.
		out, _ := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "get", "sessions", "-w", "--output-watch-events", "--no-headers")
		printed <- string(out)
	}()
	time.Sleep(2 * time.Second) // let the watch start before the event
	apply(t, cp.AdminKubeconfig, sessionManifest("watched", ""), "-n", ns)
	time.Sleep(2 * time.Second) // let the event arrive
	cancel()
	if out := <-printed; !strings.Contains(out, "ADDED") || !strings.Contains(out, "watched") {
		t.Fatalf("watch printed %q, want an ADDED event for watched", out)
	}
}

func TestInvalidObjectNamesField(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "invalid")
	bad := strings.Replace(sessionManifest("too-long", ""), "ttl: 1h", "ttl: 48h", 1)
	msg := kubectlErr(t, cp.AdminKubeconfig, bad, "-n", ns, "apply", "-f", "-")
	if !strings.Contains(msg, "is invalid") || !strings.Contains(msg, "spec.ttl") || !strings.Contains(msg, "must be at most 24h0m0s") {
		t.Errorf("error does not name spec.ttl and its limit: %s", msg)
	}
	crossNamespace := `apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata: {name: sneaky}
spec:
  shoot: {name: local}
  kubeconfig: {secret: {name: stolen, namespace: kube-system}}
`
	msg = kubectlErr(t, cp.AdminKubeconfig, crossNamespace, "-n", ns, "apply", "-f", "-")
	if !strings.Contains(msg, "spec.kubeconfig.secret.namespace") {
		t.Errorf("error does not name spec.kubeconfig.secret.namespace: %s", msg)
	}
}
