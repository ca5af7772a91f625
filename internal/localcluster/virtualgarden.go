// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The virtual garden (Options.VirtualGarden), as gardener-operator lays a
// landscape out: a second kube-apiserver that runs no pods (no nodes, no
// scheduler) holds users, Projects, Shoots and RBAC, with gardener-apiserver
// aggregated into it, while the components run in the runtime cluster, the
// garden with the process node here. InstallVirtualGarden installs
// clustergate that way: pods, etcd and Services in the runtime cluster, the
// APIService, its Service and the RBAC in the virtual garden.

// virtualGarden is what startVirtualGarden keeps of the virtual garden.
type virtualGarden struct {
	// ca serves the virtual garden's kube-apiserver, clientCA signs its
	// admin, frontProxyCA its aggregator's client certificate, and
	// serviceAccount signs its service-account tokens: none is shared with
	// the runtime cluster, so that nothing of it works there by accident.
	ca, clientCA, frontProxyCA, serviceAccount *CA
	serving, admin, frontProxyClient           KeyPair
	// podURL is the virtual garden as the runtime cluster's pods reach it:
	// a relay on the process node's gateway, as a landscape's pods reach
	// the virtual garden's Service.
	podURL string
}

// virtualGardenKubeconfigPath is where components/virtual-garden-runtime
// mounts the generic token kubeconfig and the token, as gardener's
// InjectGenericKubeconfig does.
const virtualGardenKubeconfigPath = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig"

// startVirtualGarden issues the virtual garden's certificates and starts
// its kube-apiserver, with aggregator routing as gardener-operator's, and a
// kube-controller-manager with the few controllers a virtual garden runs;
// nothing without Options.VirtualGarden.
func (cp *ControlPlane) startVirtualGarden(ctx context.Context) error {
	if !cp.opts.VirtualGarden {
		return nil
	}
	if !cp.opts.Installed {
		return fmt.Errorf("Options.VirtualGarden needs Options.Installed")
	}
	gw, err := cp.processNodeGateway()
	if err != nil {
		return err
	}
	v := &virtualGarden{}
	// Each step does nothing once one has failed; the first error counts.
	newCA := func(name string) *CA {
		var ca *CA
		if err == nil {
			ca, err = NewCA(cp.pki, name, false)
		}
		return ca
	}
	client := func(ca *CA, name, user string, groups ...string) KeyPair {
		var kp KeyPair
		if err == nil {
			kp, err = ca.ClientCert(cp.pki, name, user, groups...)
		}
		return kp
	}
	v.ca = newCA("virtual-garden-ca")
	if err == nil {
		v.serving, err = v.ca.Issue(cp.pki, "virtual-garden-apiserver", "virtual-garden-apiserver", nil,
			[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"},
			[]net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(gw)}, x509.ExtKeyUsageServerAuth)
	}
	v.clientCA = newCA("virtual-garden-client-ca")
	v.admin = client(v.clientCA, "virtual-garden-admin", "admin", "system:masters")
	v.frontProxyCA = newCA("virtual-garden-front-proxy-ca")
	v.frontProxyClient = client(v.frontProxyCA, "virtual-garden-front-proxy-client", "front-proxy-client")
	v.serviceAccount = newCA("virtual-garden-service-account")
	if err != nil {
		return err
	}

	port, err := FreePort()
	if err != nil {
		return err
	}
	if err := cp.startKubeAPIServer("virtual-garden-apiserver", port, v.serving, v.clientCA, v.serviceAccount, "/registry-virtual-garden",
		// The aggregator dials the endpoints of an APIService's Service
		// (the runtime cluster's Service), not its own ClusterIP, which
		// leads nowhere in a cluster without nodes.
		append(aggregatorArgs(v.frontProxyCA, v.frontProxyClient), "--enable-aggregator-routing=true")...); err != nil {
		return err
	}
	cp.VirtualGardenURL = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.VirtualGardenKubeconfig = filepath.Join(cp.opts.Dir, "virtual-garden.kubeconfig")
	if err := writeKubeconfig(cp.VirtualGardenKubeconfig, "virtual-garden", cp.VirtualGardenURL, v.ca.CertPEM(), v.admin, "admin"); err != nil {
		return err
	}
	if err := cp.waitReady(ctx, cp.VirtualGardenKubeconfig); err != nil {
		return err
	}
	relay, err := cp.balance(net.JoinHostPort(gw, "0"), strings.TrimPrefix(cp.VirtualGardenURL, "https://"))
	if err != nil {
		return err
	}
	v.podURL = "https://" + relay
	cp.virtual = v
	controllersPort, err := FreePort()
	if err != nil {
		return err
	}
	// Aggregated ClusterRoles and namespace deletion, as gardener-operator's
	// virtual-garden-kube-controller-manager; no service-account token
	// controller: tokens come from the TokenRequest API.
	return cp.startControllerManager("virtual-garden-controller-manager", cp.VirtualGardenKubeconfig, controllersPort,
		"clusterrole-aggregation-controller,namespace-controller", "--use-service-account-credentials=true")
}

// gardenerHome is the admin's kubeconfig of the cluster where
// gardener-apiserver is aggregated: the virtual garden if there is one.
func (cp *ControlPlane) gardenerHome() string {
	if cp.opts.VirtualGarden {
		return cp.VirtualGardenKubeconfig
	}
	return cp.AdminKubeconfig
}

// virtualGardenServerArgs are the server flags that point Gardener's client
// and the session kubeconfigs at the virtual garden: the generic token
// kubeconfig serves Gardener's API too, and its CA (bundle.crt, which the
// token requestor injects) verifies the URL users reach.
func (cp *ControlPlane) virtualGardenServerArgs() []string {
	return []string{
		"--gardener-kubeconfig=" + virtualGardenKubeconfigPath + "/kubeconfig",
		"--gardener-project=" + Project,
		"--external-url=" + cp.VirtualGardenURL,
		"--external-ca-file=" + virtualGardenKubeconfigPath + "/bundle.crt",
	}
}

// genericTokenKubeconfig is the Secret clustergate-virtual-garden-kubeconfig
// of components/virtual-garden-runtime, in the shape of gardener-operator's
// generic-token-kubeconfig: the virtual garden's URL as pods reach it and
// its CA, and a token file beside it.
func (cp *ControlPlane) genericTokenKubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: virtual-garden
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: clustergate
  user:
    tokenFile: %s/token
contexts:
- name: virtual-garden
  context: {cluster: virtual-garden, user: clustergate}
current-context: virtual-garden
`, cp.virtual.podURL, base64.StdEncoding.EncodeToString(cp.virtual.ca.CertPEM()), virtualGardenKubeconfigPath)
}

// RequestVirtualGardenToken does what gardener-resource-manager's
// TokenRequestor does for the Secret shoot-access-clustergate in the
// runtime cluster: it requests a token of the ServiceAccount clustergate
// in the virtual garden (TokenRequest API) and writes it, with the virtual
// garden's CA (inject-ca-bundle), into the Secret's token and bundle.crt.
func (cp *ControlPlane) RequestVirtualGardenToken(ctx context.Context, validity time.Duration) error {
	token, err := cp.Kubectl(ctx, cp.VirtualGardenKubeconfig, nil, "-n", ServerNamespace, "create", "token", "clustergate",
		"--duration="+validity.String())
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"data":{"token":%q,"bundle.crt":%q}}`,
		base64.StdEncoding.EncodeToString([]byte(strings.TrimSpace(string(token)))),
		base64.StdEncoding.EncodeToString(cp.virtual.ca.CertPEM()))
	_, err = cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ServerNamespace, "patch", "secret", "shoot-access-clustergate",
		"--type=merge", "-p", patch)
	return err
}

// InstallVirtualGarden installs clustergate the way docs/operations.md
// ("Installing on a gardener-operator landscape") says: an overlay of
// artifacts/overlays/virtual-garden applied to the virtual garden, an
// overlay of artifacts/overlays/ha with the cert-manager and
// virtual-garden-runtime components applied to the runtime cluster (the
// garden), the server's token requested, the APIService's caBundle set
// from the runtime's certificate, and the EndpointSlice pointed at the
// runtime Service. It returns once the APIService is Available in the
// virtual garden. Options.VirtualGarden, and StartCertManager first.
func (cp *ControlPlane) InstallVirtualGarden(ctx context.Context, o InstallOptions) error {
	if cp.virtual == nil {
		return fmt.Errorf("no virtual garden: start with Options.VirtualGarden")
	}
	// The runtime Service's ClusterIP, as the virtual garden's
	// kube-apiserver reaches it: no kube-proxy runs here, so a relay on the
	// process node's gateway (Endpoints refuse loopback addresses) stands
	// in for it; the server's pods join it once they run.
	gw, err := cp.processNodeGateway()
	if err != nil {
		return err
	}
	service, err := newBalancer(net.JoinHostPort(gw, "0"))
	if err != nil {
		return err
	}
	cp.balancers = append(cp.balancers, service)

	// Each half is the release's manifest of its layout under an overlay
	// with what the docs say to set, as a landscape applies a release.
	dir := filepath.Join(cp.opts.RepoRoot, "_output", "install", "virtual-garden")
	var manifests [2]string
	for i, half := range []string{"virtual", "runtime"} {
		layout := map[string]string{"virtual": "virtual-garden", "runtime": "virtual-garden-runtime"}[half]
		if err := os.MkdirAll(filepath.Join(dir, half), 0o755); err != nil {
			return err
		}
		if manifests[i], err = cp.releasedManifest(ctx, filepath.Join(dir, half), layout, o); err != nil {
			return err
		}
	}
	virtual := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ` + manifests[0] + `
patches:
- target: {kind: EndpointSlice, name: clustergate-runtime}
  patch: |-
    - op: replace
      path: /endpoints/0/addresses
      value: [` + gw + `]
    - op: replace
      path: /ports/0/port
      value: ` + strconv.Itoa(service.port()) + `
`
	runtime := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ` + manifests[1] + `
secretGenerator:
- name: clustergate-virtual-garden-kubeconfig
  namespace: clustergate-system
  files: [kubeconfig=virtual-garden.kubeconfig]
patches:
` + serverArgsPatch(append(cp.virtualGardenServerArgs(), o.ServerArgs...))
	for name, content := range map[string]string{
		"virtual/kustomization.yaml":        virtual,
		"runtime/kustomization.yaml":        runtime,
		"runtime/virtual-garden.kubeconfig": cp.genericTokenKubeconfig(),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}

	applied := time.Now()
	// The ServiceAccount first: the server's token is one of it.
	if _, err := cp.Kubectl(ctx, cp.VirtualGardenKubeconfig, nil, "apply", "-k", filepath.Join(dir, "virtual")); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "-k", filepath.Join(dir, "runtime")); err != nil {
		return err
	}
	if err := cp.RequestVirtualGardenToken(ctx, 12*time.Hour); err != nil {
		return err
	}
	runtimeWait := func(what string, args ...string) installStep {
		return installStep{what, cp.AdminKubeconfig, append([]string{"-n", ServerNamespace}, args...)}
	}
	if err := cp.waitInstalled(ctx, applied, []installStep{
		runtimeWait("certificates ready", "wait", "--for=condition=Ready", "certificate", "--all", "--timeout=120s"),
	}); err != nil {
		return err
	}
	ca, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ServerNamespace, "get", "secret", "clustergate-serving-cert",
		"-o", `jsonpath={.data.ca\.crt}`)
	if err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.VirtualGardenKubeconfig, nil, "patch", "apiservice", "v1alpha1.clustergate.dev", "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"caBundle":%q}}`, strings.TrimSpace(string(ca)))); err != nil {
		return err
	}
	if err := cp.waitInstalled(ctx, applied, []installStep{
		runtimeWait("etcd 3/3 ready", "rollout", "status", "statefulset/clustergate-etcd", "--timeout=300s"),
		runtimeWait("deployment clustergate available", "rollout", "status", "deployment/clustergate", "--timeout=300s"),
	}); err != nil {
		return err
	}
	ips, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ServerNamespace, "get", "pods", "-l", "app.kubernetes.io/name=clustergate",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].status.podIP}")
	if err != nil {
		return err
	}
	for _, ip := range strings.Fields(string(ips)) {
		service.add(net.JoinHostPort(ip, "8443"))
	}
	// The aggregator rechecks an unavailable APIService after a backoff of
	// up to 30 s, or when its Service changes: touch it.
	if _, err := cp.Kubectl(ctx, cp.VirtualGardenKubeconfig, nil, "-n", ServerNamespace, "annotate", "service", "clustergate",
		"--overwrite", "clustergate.dev/endpoints-ready="+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	return cp.waitInstalled(ctx, applied, []installStep{
		{"APIService available in the virtual garden", cp.VirtualGardenKubeconfig,
			[]string{"wait", "--for=condition=Available", "apiservice/v1alpha1.clustergate.dev", "--timeout=120s"}},
	})
}
