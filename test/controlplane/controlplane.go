// Package controlplane starts a whole local control plane on 127.0.0.1 from
// the pinned binaries that hack/tools/build.sh builds: etcd, a garden
// kube-apiserver with aggregation, gardener-apiserver with a project and a
// workerless Shoot, a second kube-apiserver that is that Shoot's API server
// with a kube-controller-manager signing its CSRs, and clustergate registered
// through the APIService from artifacts/. `make run` and the e2e tests use it.
package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/credentials"
)

//go:embed fixtures/*.yaml
var fixtures embed.FS

// Gardener project and Shoot of the local control plane.
const (
	Project = "local"
	Shoot   = "local"
)

// NodeName is the shoot's one node, a stand-in kubelet that serves exec
// (of the commands echo and cat) and port-forward (to an echo service) for
// pods bound to it.
const NodeName = "stand-in"

// ShootTargetSecret is the Secret in clustergate-system that holds a
// kubeconfig of the shoot, for sessions with a cluster target.
const ShootTargetSecret = "shoot-kubeconfig"

// ClustergateServiceAccount is the identity clustergate has in the garden
// cluster, as it would have from its ServiceAccount in a real one.
const ClustergateServiceAccount = "system:serviceaccount:clustergate-system:clustergate"

// gardenerGroupVersions are the API group versions gardener-apiserver serves.
var gardenerGroupVersions = []struct{ Group, Version string }{
	{"core.gardener.cloud", "v1beta1"},
	{"core.gardener.cloud", "v1"},
	{"seedmanagement.gardener.cloud", "v1alpha1"},
	{"operations.gardener.cloud", "v1alpha1"},
	{"security.gardener.cloud", "v1alpha1"},
}

// Options say where the control plane finds its binaries and keeps its files.
type Options struct {
	// Dir holds certificates, kubeconfigs, data and logs. It is emptied first.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// gardener-apiserver and clustergate-apiserver.
	BinDir string
	// RepoRoot is the clustergate checkout, whose artifacts/ are applied.
	RepoRoot string
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
	// ClustergateArgs are added to clustergate-apiserver's flags.
	ClustergateArgs []string
	// SharedEtcd stores clustergate's objects in the garden etcd instead of
	// its embedded one, so that StartReplica can add replicas; the
	// APIService's Service then reaches them through a balancer.
	SharedEtcd bool
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	opts  Options
	procs []*process
	pki   string
	logs  string

	ports  ports
	values values
	// balancer is in front of clustergate's replicas with SharedEtcd.
	balancer *balancer
	// clientCA signs the certificates of garden users; gardenCA serves the
	// garden kube-apiserver; aggregatedCA serves the aggregated servers.
	clientCA, gardenCA, aggregatedCA *CA

	// AdminKubeconfig reaches the garden kube-apiserver as system:masters.
	AdminKubeconfig string
	// ShootKubeconfig reaches the shoot kube-apiserver as system:masters.
	ShootKubeconfig string
	// GardenURL and ShootURL are the two kube-apiservers.
	GardenURL, ShootURL string
	// ShootAuditLog is the shoot kube-apiserver's audit log, one JSON event
	// per line at level Metadata: what a target sees of proxied requests.
	ShootAuditLog string
	// ClustergateURL is clustergate-apiserver itself, without the aggregator.
	ClustergateURL string
}

// Start brings the whole control plane up and returns once clustergate's
// APIService is Available and sessions can be listed through it. On error
// everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	cp := &ControlPlane{opts: opts, pki: filepath.Join(opts.Dir, "pki"), logs: filepath.Join(opts.Dir, "logs")}
	defer func() {
		if err != nil {
			cp.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, cp.logs)
		}
	}()
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, err
	}
	for _, d := range []string{cp.pki, cp.logs, filepath.Join(opts.Dir, "data")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"etcd and kube-apiservers", cp.startKubeAPIServers},
		{"controller managers", cp.startControllerManagers},
		{"gardener-apiserver", cp.startGardener},
		{"clustergate", cp.startClustergate},
	} {
		start := time.Now()
		if err := step.run(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", step.name, err)
		}
		opts.Logf("%s ready in %s", step.name, time.Since(start).Round(100*time.Millisecond))
	}
	return cp, nil
}

// Stop stops every process, aggregated servers before the kube-apiservers
// (a kube-apiserver with aggregated servers attached takes a minute to stop).
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop(15 * time.Second)
	}
	cp.procs = nil
	if cp.balancer != nil {
		cp.balancer.close()
	}
}

// ports are the listening ports of the control plane, all on 127.0.0.1.
type ports struct {
	etcd, etcdPeer, garden, shoot, gardenControllers, signer, gardener, clustergate, node int
}

func (cp *ControlPlane) start(name, bin string, args ...string) error {
	p, err := startProcess(cp.logs, name, filepath.Join(cp.opts.BinDir, bin), args...)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
	return nil
}

func (cp *ControlPlane) process(name string) (int, error) {
	for i, p := range cp.procs {
		if p.name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no component %q", name)
}

// StopComponent stops one component, such as "gardener-apiserver" or
// "clustergate", to test how the others cope.
func (cp *ControlPlane) StopComponent(name string) error {
	i, err := cp.process(name)
	if err != nil {
		return err
	}
	cp.procs[i].stop(15 * time.Second)
	return nil
}

// StartComponent starts a stopped component again with the same flags and
// waits until its APIServices are Available.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
	i, err := cp.process(name)
	if err != nil {
		return err
	}
	old := cp.procs[i]
	if done, _ := old.exited(); !done {
		return fmt.Errorf("%s is running", name)
	}
	if cp.procs[i], err = startProcess(cp.logs, name, old.cmd.Path, old.cmd.Args[1:]...); err != nil {
		cp.procs[i] = old
		return err
	}
	names, url, service := []string{"v1alpha1.clustergate.dev"}, cp.ClustergateURL, "clustergate-system/clustergate"
	if name == "gardener-apiserver" {
		names, url, service = nil, fmt.Sprintf("https://127.0.0.1:%d", cp.ports.gardener), "kube-system/gardener-apiserver"
		for _, gv := range gardenerGroupVersions {
			names = append(names, gv.Version+"."+gv.Group)
		}
	}
	// The aggregator rechecks an unavailable APIService after a backoff of
	// up to 30 s, or when its Service changes, as a restarted pod's
	// endpoints would: once the server is ready, touch the Service.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cp.aggregatedCA.CertPEM())
	if err := cp.waitHTTP(ctx, url+"/readyz", roots); err != nil {
		return err
	}
	ns, svc, _ := strings.Cut(service, "/")
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "annotate", "service", svc, "--overwrite",
		"clustergate.dev/restarted="+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	for _, n := range names {
		if err := cp.waitAPIService(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// checkAlive fails when a started process has exited without being stopped.
func (cp *ControlPlane) checkAlive() error {
	for _, p := range cp.procs {
		if done, err := p.exited(); done && !p.stopped {
			return fmt.Errorf("%s exited: %v; see %s", p.name, err, filepath.Join(cp.logs, p.name+".log"))
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func allocatePorts() (ports, error) {
	var p ports
	for _, dst := range []*int{&p.etcd, &p.etcdPeer, &p.garden, &p.shoot, &p.gardenControllers, &p.signer, &p.gardener, &p.clustergate, &p.node} {
		port, err := freePort()
		if err != nil {
			return p, err
		}
		*dst = port
	}
	return p, nil
}

func (cp *ControlPlane) startKubeAPIServers(ctx context.Context) error {
	var err error
	if cp.ports, err = allocatePorts(); err != nil {
		return err
	}
	pki := cp.pki

	gardenCA, err := NewCA(pki, "garden-ca", false)
	if err != nil {
		return err
	}
	gardenServing, err := gardenCA.ServingCert(pki, "garden-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	if err != nil {
		return err
	}
	if cp.clientCA, err = NewCA(pki, "garden-client-ca", false); err != nil {
		return err
	}
	frontProxyCA, err := NewCA(pki, "front-proxy-ca", false)
	if err != nil {
		return err
	}
	frontProxyClient, err := frontProxyCA.ClientCert(pki, "front-proxy-client", "front-proxy-client")
	if err != nil {
		return err
	}
	saKey, err := NewCA(pki, "service-account", false)
	if err != nil {
		return err
	}
	shootCA, err := NewCA(pki, "shoot-ca", false)
	if err != nil {
		return err
	}
	shootServing, err := shootCA.ServingCert(pki, "shoot-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	if err != nil {
		return err
	}
	// Gardener signs admin and viewer certificates with the shoot's client CA.
	shootClientCA, err := NewCA(pki, "shoot-client-ca", true)
	if err != nil {
		return err
	}
	// The shoot's node: its serving certificate, verified by the shoot's
	// kube-apiserver, which presents a client certificate of its own.
	nodeCA, err := NewCA(pki, "node-ca", false)
	if err != nil {
		return err
	}
	nodeServing, err := nodeCA.ServingCert(pki, "node")
	if err != nil {
		return err
	}
	kubeletClient, err := shootClientCA.ClientCert(pki, "shoot-apiserver-kubelet-client", "kube-apiserver-kubelet-client")
	if err != nil {
		return err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcdPeer)
	if err := cp.start("etcd", "etcd",
		"--data-dir", filepath.Join(cp.opts.Dir, "data", "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn",
	); err != nil {
		return err
	}
	if err := cp.waitHTTP(ctx, etcdURL+"/health", nil); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}

	kubeAPIServer := func(name string, port int, serving KeyPair, clientCA *CA, prefix string, extra ...string) error {
		args := []string{
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
			"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
			"--etcd-servers=" + etcdURL, "--etcd-prefix=" + prefix,
			"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
			"--client-ca-file=" + clientCA.CertFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + saKey.KeyFile,
			"--service-account-signing-key-file=" + saKey.KeyFile,
			"--service-cluster-ip-range=10.0.0.0/24",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
			"--cert-dir=" + filepath.Join(cp.opts.Dir, "data", name),
		}
		return cp.start(name, "kube-apiserver", append(args, extra...)...)
	}
	if err := kubeAPIServer("garden-apiserver", cp.ports.garden, gardenServing, cp.clientCA, "/registry-garden",
		"--requestheader-client-ca-file="+frontProxyCA.CertFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+frontProxyClient.CertFile,
		"--proxy-client-key-file="+frontProxyClient.KeyFile,
	); err != nil {
		return err
	}
	auditPolicy := filepath.Join(cp.opts.Dir, "shoot-audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(shootAuditPolicy), 0o600); err != nil {
		return err
	}
	cp.ShootAuditLog = filepath.Join(cp.logs, "shoot-audit.log")
	if err := kubeAPIServer("shoot-apiserver", cp.ports.shoot, shootServing, shootClientCA, "/registry-shoot",
		"--audit-policy-file="+auditPolicy, "--audit-log-path="+cp.ShootAuditLog, "--audit-log-format=json",
		"--kubelet-certificate-authority="+nodeCA.CertFile,
		"--kubelet-client-certificate="+kubeletClient.CertFile,
		"--kubelet-client-key="+kubeletClient.KeyFile,
		"--kubelet-preferred-address-types=InternalIP",
	); err != nil {
		return err
	}
	if err := cp.start("node", "node", fmt.Sprintf("--listen=127.0.0.1:%d", cp.ports.node),
		"--tls-cert-file="+nodeServing.CertFile, "--tls-private-key-file="+nodeServing.KeyFile,
		"--client-ca-file="+shootClientCA.CertFile); err != nil {
		return err
	}

	cp.GardenURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.garden)
	cp.ShootURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.shoot)
	gardenAdmin, err := cp.clientCA.ClientCert(pki, "garden-admin", "admin", "system:masters")
	if err != nil {
		return err
	}
	shootAdmin, err := shootClientCA.ClientCert(pki, "shoot-admin", "admin", "system:masters")
	if err != nil {
		return err
	}
	cp.AdminKubeconfig = filepath.Join(cp.opts.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(cp.AdminKubeconfig, "garden", cp.GardenURL, gardenCA.CertPEM(), gardenAdmin, "admin"); err != nil {
		return err
	}
	cp.ShootKubeconfig = filepath.Join(cp.opts.Dir, "shoot.kubeconfig")
	if err := writeKubeconfig(cp.ShootKubeconfig, "shoot", cp.ShootURL, shootCA.CertPEM(), shootAdmin, "admin"); err != nil {
		return err
	}
	for _, kc := range []string{cp.AdminKubeconfig, cp.ShootKubeconfig} {
		if err := cp.waitReady(ctx, kc); err != nil {
			return err
		}
	}

	// Values for the fixtures that need the shoot's CAs.
	cp.values.ShootServingCA = string(shootCA.CertPEM())
	cp.values.ShootClientCACert = base64File(shootClientCA.CertFile)
	cp.values.ShootClientCAKey = base64File(shootClientCA.KeyFile)
	cp.gardenCA = gardenCA
	if err := cp.applyFixture(ctx, cp.ShootKubeconfig, "shoot-rbac.yaml"); err != nil {
		return err
	}
	return cp.registerNode(ctx)
}

// shootAuditPolicy logs who made each request to the shoot and from where.
const shootAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// registerNode makes the stand-in node known to the shoot, Ready, at its
// address and port, so that the shoot's kube-apiserver sends exec and
// port-forward of pods bound to it there.
func (cp *ControlPlane) registerNode(ctx context.Context) error {
	cp.values.NodeName = NodeName
	if err := cp.applyFixture(ctx, cp.ShootKubeconfig, "shoot-node.yaml"); err != nil {
		return err
	}
	status := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],`+
		`"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}},`+
		`"conditions":[{"type":"Ready","status":"True","reason":"StandIn","message":"the control plane's stand-in node",`+
		`"lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		cp.ports.node, time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	_, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "patch", "node", NodeName, "--subresource=status", "--type=merge", "-p", status)
	return err
}

// startControllerManagers starts one kube-controller-manager per cluster,
// each running only the controllers the tests rely on.
func (cp *ControlPlane) startControllerManagers(context.Context) error {
	controllerManager := func(name, kubeconfig string, port int, controllers string, extra ...string) error {
		return cp.start(name, "kube-controller-manager", append([]string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
			"--controllers=" + controllers,
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--cert-dir=" + filepath.Join(cp.opts.Dir, "data", name),
		}, extra...)...)
	}
	// In the garden: aggregated ClusterRoles (clustergate's read rules join
	// "view"), namespace deletion, and the usage of ResourceQuotas, which
	// clustergate's admission enforces for its own resources.
	// A new quota's usage of a resource the controller did not know yet
	// (clustergate registers after it starts) is computed at the next full
	// sync: every 15 s here, not every 5 minutes.
	// Each controller acts as its own service account with the RBAC a real
	// cluster gives it: the namespace controller may delete every resource
	// but holds no custom verbs such as clustergate's "revoke".
	if err := controllerManager("garden-controller-manager", cp.AdminKubeconfig, cp.ports.gardenControllers,
		"clusterrole-aggregation-controller,namespace-controller,resourcequota-controller",
		"--resource-quota-sync-period=15s", "--use-service-account-credentials=true"); err != nil {
		return err
	}
	// In the shoot: the CSR signer, signing with the shoot's client CA, so
	// that certificates minted for Sessions authenticate at the shoot; and
	// aggregated ClusterRoles, so that "view" and "edit" hold their rules.
	return controllerManager("shoot-controller-manager", cp.ShootKubeconfig, cp.ports.signer,
		"certificatesigningrequest-signing-controller,clusterrole-aggregation-controller",
		"--cluster-signing-cert-file="+filepath.Join(cp.pki, "shoot-client-ca.crt"),
		"--cluster-signing-key-file="+filepath.Join(cp.pki, "shoot-client-ca.key"))
}

func (cp *ControlPlane) startGardener(ctx context.Context) error {
	aggregatedCA, err := NewCA(cp.pki, "aggregated-ca", false)
	if err != nil {
		return err
	}
	cp.aggregatedCA = aggregatedCA
	serving, err := aggregatedCA.ServingCert(cp.pki, "gardener-apiserver", "gardener-apiserver.kube-system.svc")
	if err != nil {
		return err
	}
	if err := cp.start("gardener-apiserver", "gardener-apiserver",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(cp.ports.gardener),
		"--etcd-servers="+fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcd),
		"--tls-cert-file="+serving.CertFile, "--tls-private-key-file="+serving.KeyFile,
		"--cluster-identity=clustergate-local",
		"--kubeconfig="+cp.AdminKubeconfig,
		"--authentication-kubeconfig="+cp.AdminKubeconfig,
		"--authorization-kubeconfig="+cp.AdminKubeconfig,
		"--enable-priority-and-fairness=false",
	); err != nil {
		return err
	}
	cp.values.GardenerPort = cp.ports.gardener
	cp.values.GardenerGroupVersions = gardenerGroupVersions
	cp.values.AggregatedCABundle = base64.StdEncoding.EncodeToString(aggregatedCA.CertPEM())
	cp.values.Project, cp.values.Shoot = Project, Shoot
	if err := cp.applyFixture(ctx, cp.AdminKubeconfig, "gardener-apiservices.yaml"); err != nil {
		return err
	}
	for _, gv := range gardenerGroupVersions {
		if err := cp.waitAPIService(ctx, gv.Version+"."+gv.Group); err != nil {
			return err
		}
	}
	// Admission in gardener-apiserver reads Projects from its own cache, so a
	// Shoot may be refused until it has seen the Project: applying again is
	// harmless.
	if err := cp.retry(ctx, func() error { return cp.applyFixture(ctx, cp.AdminKubeconfig, "gardener.yaml") }); err != nil {
		return err
	}
	status := fmt.Sprintf(`{"status":{"advertisedAddresses":[{"name":"external","url":%q}]}}`, cp.ShootURL)
	if _, err = cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "garden-"+Project, "patch", "shoot", Shoot,
		"--subresource=status", "--type=merge", "-p", status); err != nil {
		return err
	}
	// clustergate's identity may request kubeconfigs of the project's Shoots.
	_, err = cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "garden-"+Project, "apply", "-f",
		filepath.Join(cp.opts.RepoRoot, "artifacts", "gardener", "role.yaml"))
	return err
}

func (cp *ControlPlane) startClustergate(ctx context.Context) error {
	serving, err := cp.aggregatedCA.ServingCert(cp.pki, "clustergate", "clustergate.clustergate-system.svc")
	if err != nil {
		return err
	}
	identity, err := cp.clientCA.ClientCert(cp.pki, "clustergate-client", ClustergateServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:clustergate-system")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(cp.opts.Dir, "clustergate.kubeconfig")
	if err := writeKubeconfig(kubeconfig, "garden", cp.GardenURL, cp.gardenCA.CertPEM(), identity, "clustergate"); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "-k", filepath.Join(cp.opts.RepoRoot, "artifacts", "rbac")); err != nil {
		return err
	}
	if err := cp.installIstioCRDs(ctx); err != nil {
		return err
	}
	// A cluster target for sessions: the shoot, reached with its admin
	// kubeconfig, which may create and approve CSRs there.
	shootKubeconfig, err := os.ReadFile(cp.ShootKubeconfig)
	if err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, shootKubeconfig, "-n", "clustergate-system", "create", "secret", "generic",
		ShootTargetSecret, "--from-file=kubeconfig=/dev/stdin"); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "clustergate-system", "label", "secret", ShootTargetSecret,
		credentials.LabelClusterTarget+"=true"); err != nil {
		return err
	}
	if err := cp.start("clustergate", "clustergate-apiserver", append([]string{
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cp.ports.clustergate),
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--data-dir=" + filepath.Join(cp.opts.Dir, "data", "clustergate"),
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--gardener-kubeconfig=" + kubeconfig,
		"--gardener-project=" + Project,
		"--namespace=clustergate-system",
		// Session kubeconfigs point at the garden kube-apiserver.
		"--external-url=" + cp.GardenURL,
		"--external-ca-file=" + cp.gardenCA.CertFile,
		// Short sessions for demos and tests.
		"--session-min-ttl=10s",
		// Gardener's outages show within seconds.
		"--gardener-probe-interval=2s",
	}, append(cp.storageArgs(), cp.opts.ClustergateArgs...)...)...); err != nil {
		return err
	}
	cp.ClustergateURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.clustergate)
	cp.values.ClustergatePort = cp.ports.clustergate
	if cp.opts.SharedEtcd {
		// Replicas may join: the Service reaches them through a balancer,
		// as it would through kube-proxy.
		if cp.balancer, err = newBalancer(); err != nil {
			return err
		}
		cp.balancer.add(fmt.Sprintf("127.0.0.1:%d", cp.ports.clustergate))
		cp.values.ClustergatePort = cp.balancer.port()
	}
	if err := cp.applyFixture(ctx, cp.AdminKubeconfig, "clustergate-service.yaml"); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "-k", filepath.Join(cp.opts.RepoRoot, "artifacts", "apiservice")); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"caBundle":%q,"service":{"port":%d}}}`, cp.values.AggregatedCABundle, cp.values.ClustergatePort)
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "patch", "apiservice", "v1alpha1.clustergate.dev", "--type=merge", "-p", patch); err != nil {
		return err
	}
	if err := cp.waitAPIService(ctx, "v1alpha1.clustergate.dev"); err != nil {
		return err
	}
	// Ready for users: sessions can be listed, and the aggregator has merged
	// clustergate's OpenAPI, which kubectl explain and apply validation read.
	return cp.retry(ctx, func() error {
		if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "get", "sessions", "-A"); err != nil {
			return err
		}
		_, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "explain", "sessions.clustergate.dev.spec.ttl")
		return err
	})
}

// PID is the process ID of a running component, such as "clustergate".
func (cp *ControlPlane) PID(name string) (int, error) {
	i, err := cp.process(name)
	if err != nil {
		return 0, err
	}
	return cp.procs[i].cmd.Process.Pid, nil
}

// RSSKiB is the resident memory of a running component, in KiB.
func (cp *ControlPlane) RSSKiB(name string) (int, error) {
	pid, err := cp.PID(name)
	if err != nil {
		return 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "VmRSS:" {
			return strconv.Atoi(fields[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", name)
}

// GardenerMetrics returns gardener-apiserver's /metrics, read directly as
// the garden admin.
func (cp *ControlPlane) GardenerMetrics(ctx context.Context) ([]byte, error) {
	return cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "--server", fmt.Sprintf("https://127.0.0.1:%d", cp.ports.gardener),
		"--certificate-authority", cp.aggregatedCA.CertFile, "get", "--raw", "/metrics")
}

func (cp *ControlPlane) storageArgs() []string {
	if !cp.opts.SharedEtcd {
		return nil
	}
	return []string{fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", cp.ports.etcd), "--etcd-prefix=/registry-clustergate"}
}

// Replica is a further clustergate replica, behind the APIService next to
// the first one.
type Replica struct {
	// Name is the replica's component name, for StopComponent.
	Name string
	// URL is where it serves.
	URL string
}

// StartReplica starts another clustergate replica on the shared etcd with
// the flags of the first, waits until it is ready and puts it behind the
// APIService's Service.
func (cp *ControlPlane) StartReplica(ctx context.Context, name string) (Replica, error) {
	if !cp.opts.SharedEtcd {
		return Replica{}, errors.New("replicas need Options.SharedEtcd")
	}
	i, err := cp.process("clustergate")
	if err != nil {
		return Replica{}, err
	}
	port, err := freePort()
	if err != nil {
		return Replica{}, err
	}
	var args []string
	for _, a := range cp.procs[i].cmd.Args[1:] {
		switch {
		case strings.HasPrefix(a, "--secure-port="):
			a = "--secure-port=" + strconv.Itoa(port)
		case strings.HasPrefix(a, "--data-dir="):
			a = "--data-dir=" + filepath.Join(cp.opts.Dir, "data", name)
		}
		args = append(args, a)
	}
	if err := cp.start(name, "clustergate-apiserver", args...); err != nil {
		return Replica{}, err
	}
	r := Replica{Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", port)}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cp.aggregatedCA.CertPEM())
	if err := cp.waitHTTP(ctx, r.URL+"/readyz", roots); err != nil {
		return Replica{}, err
	}
	cp.balancer.add(fmt.Sprintf("127.0.0.1:%d", port))
	return r, nil
}

// FrontProxyConfig returns a client configuration for a clustergate replica
// at url that authenticates the way the aggregator does, as user with
// groups, without passing through kube-apiserver.
func (cp *ControlPlane) FrontProxyConfig(url, user string, groups ...string) *rest.Config {
	return cp.FrontProxyConfigWithUID(url, user, "", groups...)
}

// FrontProxyConfigWithUID is FrontProxyConfig for a user with a UID, as an
// authenticator that knows UIDs (OIDC, service accounts) reports it.
func (cp *ControlPlane) FrontProxyConfigWithUID(url, user, uid string, groups ...string) *rest.Config {
	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{
		CertFile: filepath.Join(cp.pki, "front-proxy-client.crt"), KeyFile: filepath.Join(cp.pki, "front-proxy-client.key"),
		CAData: cp.aggregatedCA.CertPEM(), ServerName: "clustergate.clustergate-system.svc",
	}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("X-Remote-User", user)
			req.Header["X-Remote-Group"] = groups
			if uid != "" {
				req.Header.Set("X-Remote-Uid", uid)
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// LogDir holds the output of every component, in <component>.log.
func (cp *ControlPlane) LogDir() string { return cp.logs }

// RepoRoot is the clustergate checkout the control plane was started from.
func (cp *ControlPlane) RepoRoot() string { return cp.opts.RepoRoot }

// installIstioCRDs installs Istio's CRDs, from the istio.io/api module the
// server is built with, so that sessions get AuthorizationPolicies.
func (cp *ControlPlane) installIstioCRDs(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "istio.io/api")
	cmd.Dir = cp.opts.RepoRoot
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("locating istio.io/api: %w", err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil {
		return err
	}
	// The CRDs are too large for client-side apply's annotation.
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "--server-side", "-f",
		filepath.Join(module.Dir, "kubernetes", "customresourcedefinitions.gen.yaml")); err != nil {
		return err
	}
	_, err = cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/authorizationpolicies.security.istio.io")
	return err
}

// UserKubeconfig writes a garden kubeconfig for user name in the given
// groups, with a client certificate from the local client CA, and returns
// its path.
func (cp *ControlPlane) UserKubeconfig(name string, groups ...string) (string, error) {
	return WriteUserKubeconfig(cp.opts.Dir, name, groups...)
}

// WriteUserKubeconfig writes a garden kubeconfig for user name into the
// control plane directory dir of a running control plane.
func WriteUserKubeconfig(dir, name string, groups ...string) (string, error) {
	pki := filepath.Join(dir, "pki")
	ca, err := LoadCA(filepath.Join(pki, "garden-client-ca.crt"), filepath.Join(pki, "garden-client-ca.key"))
	if err != nil {
		return "", fmt.Errorf("no running local control plane in %s: %w", dir, err)
	}
	admin, err := clientcmd.LoadFromFile(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters["garden"]
	users := filepath.Join(dir, "users")
	if err := os.MkdirAll(users, 0o700); err != nil {
		return "", err
	}
	file := strings.NewReplacer(":", "_", "/", "_").Replace(name)
	kp, err := ca.ClientCert(users, file, name, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(users, file+".kubeconfig")
	return path, writeKubeconfig(path, "garden", cluster.Server, cluster.CertificateAuthorityData, kp, name)
}

// SessionKubeconfig fetches sessions/<name>/kubeconfig in namespace as the
// owner whose garden kubeconfig is ownerKubeconfig, completes its user with
// the owner's client certificate, as an exec plugin would, and writes it to
// path. A kubeconfig that comes with credentials of its own is refused.
func (cp *ControlPlane) SessionKubeconfig(ctx context.Context, ownerKubeconfig, namespace, name, path string) error {
	raw, err := cp.Kubectl(ctx, ownerKubeconfig, nil, "get", "--raw",
		fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/%s/kubeconfig", namespace, name))
	if err != nil {
		return err
	}
	var answer struct{ Kubeconfig []byte }
	if err := json.Unmarshal(raw, &answer); err != nil {
		return err
	}
	cfg, err := clientcmd.Load(answer.Kubeconfig)
	if err != nil {
		return err
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" || u.TokenFile != "" || len(u.ClientKeyData) > 0 || u.ClientKey != "" || u.Password != "" {
			return errors.New("sessions/kubeconfig handed out credentials")
		}
	}
	owner, err := clientcmd.LoadFromFile(ownerKubeconfig)
	if err != nil {
		return err
	}
	ownerUser := owner.AuthInfos[owner.Contexts[owner.CurrentContext].AuthInfo]
	cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo] = &clientcmdapi.AuthInfo{
		ClientCertificateData: ownerUser.ClientCertificateData, ClientKeyData: ownerUser.ClientKeyData,
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// Kubectl runs kubectl against the cluster of kubeconfig and returns its
// output; stdin, if not nil, is its input.
func (cp *ControlPlane) Kubectl(ctx context.Context, kubeconfig string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// values fill the fixture templates.
type values struct {
	Project, Shoot                      string
	ShootServingCA                      string
	ShootClientCACert, ShootClientCAKey string
	GardenerPort, ClustergatePort       int
	GardenerGroupVersions               []struct{ Group, Version string }
	AggregatedCABundle                  string
	NodeName                            string
}

func (cp *ControlPlane) applyFixture(ctx context.Context, kubeconfig, name string) error {
	tmpl, err := template.New(name).Funcs(template.FuncMap{
		"indent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
		},
	}).ParseFS(fixtures, "fixtures/"+name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, cp.values); err != nil {
		return err
	}
	_, err = cp.Kubectl(ctx, kubeconfig, buf.Bytes(), "apply", "-f", "-")
	return err
}

// waitReady waits until the API server of kubeconfig answers /readyz.
func (cp *ControlPlane) waitReady(ctx context.Context, kubeconfig string) error {
	return cp.retry(ctx, func() error {
		_, err := cp.Kubectl(ctx, kubeconfig, nil, "get", "--raw", "/readyz")
		return err
	})
}

func (cp *ControlPlane) waitAPIService(ctx context.Context, name string) error {
	return cp.retry(ctx, func() error {
		out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "get", "apiservice", name,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if err != nil {
			return err
		}
		if string(out) != "True" {
			return fmt.Errorf("APIService %s not Available yet", name)
		}
		return nil
	})
}

// waitHTTP waits until url answers 200.
func (cp *ControlPlane) waitHTTP(ctx context.Context, url string, roots *x509.CertPool) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	return cp.retry(ctx, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// retry calls f until it succeeds, a process dies, or two minutes pass.
func (cp *ControlPlane) retry(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if dead := cp.checkAlive(); dead != nil {
			return errors.Join(dead, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func writeKubeconfig(path, cluster, server string, caPEM []byte, user KeyPair, userName string) error {
	cert, err := os.ReadFile(user.CertFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(user.KeyFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: userName}
	cfg.CurrentContext = cluster
	return clientcmd.WriteToFile(*cfg, path)
}

func base64File(path string) string {
	b, _ := os.ReadFile(path)
	return base64.StdEncoding.EncodeToString(b)
}
