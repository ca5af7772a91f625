// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// floors turns the floor rows on: the same work through test/bench/floor,
// the cheapest proxy that does the same hops.
var floors = flag.Bool("floors", true, "measure every figure of the floor table through the bare Go proxies of test/bench/floor too")

// The floor's paths, after the table's columns in the paths of a run with
// floors.
const (
	// floorAggregated is client → kube-apiserver → bare generic API
	// server's targets/proxy → target.
	floorAggregated = ways + iota
	// floorProxy is client → bare reverse proxy → target.
	floorProxy
)

// The floor servers' component names.
const (
	floorAPIServer = "floor-apiserver"
	floorReverse   = "floor-proxy"
)

// floorGroupVersion is the floor API server's, as test/bench/floor names
// it.
const floorGroupVersion = "floor.bench.clustergate.dev/v1"

// startFloors builds test/bench/floor and starts it twice beside
// clustergate, each server a process of its own reaching the target of
// session s with s's minted credentials: the bare reverse proxy, and the
// bare generic API server behind the APIService of floorGroupVersion,
// whose targets/proxy the bench's service account may use. It returns the
// paths through both, in the order of floorAggregated and floorProxy;
// whole is the whole path's client configuration, whose token they share.
func startFloors(ctx context.Context, cp *localcluster.ControlPlane, garden *rest.Config, s *v1alpha1.Session, whole *rest.Config) ([]path, error) {
	bin := filepath.Join(cp.RepoRoot(), "_output", "bin", "bench-floor")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/bench/floor")
	build.Dir = cp.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the floor: %w: %s", err, out)
	}
	secret, err := kubernetes.NewForConfigOrDie(garden).CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cp.RepoRoot(), "_output", "bench-proxy")
	targetKubeconfig := filepath.Join(dir, "floor-target.kubeconfig")
	if err := os.WriteFile(targetKubeconfig, secret.Data[credentials.KeyKubeconfig], 0o600); err != nil {
		return nil, err
	}
	serving, err := cp.ServingCert("floor", "floor.clustergate-system.svc")
	if err != nil {
		return nil, err
	}
	ports := map[string]int{}
	for _, name := range []string{floorReverse, floorAPIServer} {
		if ports[name], err = localcluster.FreePort(); err != nil {
			return nil, err
		}
		mode := strings.TrimPrefix(name, "floor-")
		args := []string{mode, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[name]),
			"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile, "--target-kubeconfig=" + targetKubeconfig}
		if name == floorAPIServer {
			args = append(args, "--authentication-kubeconfig="+cp.ClustergateKubeconfig, "--authorization-kubeconfig="+cp.ClustergateKubeconfig)
		}
		if err := cp.StartProgram(name, bin, args...); err != nil {
			return nil, err
		}
	}
	ca, err := os.ReadFile(cp.DataPlaneCAFile)
	if err != nil {
		return nil, err
	}
	group, version, _ := strings.Cut(floorGroupVersion, "/")
	manifest := fmt.Sprintf(floorManifest, ports[floorAPIServer], version, group, group, version, base64.StdEncoding.EncodeToString(ca), ports[floorAPIServer], group, owner)
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, []byte(manifest), "apply", "-f", "-"); err != nil {
		return nil, err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "wait", "--for=condition=Available", "--timeout=2m", "apiservice/"+version+"."+group); err != nil {
		return nil, err
	}
	aggregated := rest.CopyConfig(whole)
	aggregated.Host = strings.TrimSuffix(garden.Host, "/") + "/apis/" + floorGroupVersion + "/namespaces/" + namespace + "/targets/" + s.Name + "/proxy"
	reverse := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d/", ports[floorReverse]), TLSClientConfig: rest.TLSClientConfig{CAFile: cp.DataPlaneCAFile}}
	reverse.QPS, reverse.Burst = 5000, 5000
	paths := []path{{name: "kube-apiserver → floor API server", cfg: aggregated, profiled: fmt.Sprintf("https://127.0.0.1:%d", ports[floorAPIServer])},
		{name: "floor proxy", cfg: reverse}}
	for i := range paths {
		if paths[i].client, err = kubernetes.NewForConfig(paths[i].cfg); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// floorManifest registers the floor API server as clustergate is
// registered, and lets the bench's service account use its proxy: the
// Service's port, the APIService's version, group, group, version, CA
// bundle and port, the ClusterRole's group and the binding's service
// account.
const floorManifest = `apiVersion: v1
kind: Service
metadata: {name: floor, namespace: clustergate-system}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{name: https, port: %d}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %s.%s}
spec:
  group: %s
  version: %s
  groupPriorityMinimum: 1000
  versionPriority: 100
  caBundle: %s
  service: {name: floor, namespace: clustergate-system, port: %d}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bench-floor}
rules: [{apiGroups: [%s], resources: [targets/proxy], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bench-floor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-floor}
subjects: [{kind: User, name: "%s"}]
`

// floorOnly skips the rows that have no floor: pkg/proxy's in-process
// benchmarks and the fleet.
var floorOnly = flag.Bool("floor-only", false, "measure only the rows of the aggregated path, the data plane and direct, with their floors: no in-process benchmarks, no fleet")
