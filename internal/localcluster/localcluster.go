// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

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
	// SessionAccessConfig is clustergate's --session-access-config; empty
	// is the shipped example, artifacts/examples/session-access.yaml, whose
	// debugger level's ClusterRole the shoot gets.
	SessionAccessConfig string
	// ClustergateMemoryLimit, when set, runs clustergate-apiserver as in a
	// container with this memory limit in bytes: with the Go soft memory
	// limit pkg/memlimit derives from it.
	ClustergateMemoryLimit int64
	// ClustergateEnv is added to clustergate-apiserver's environment, to
	// measure a setting of the Go runtime such as GOGC=50.
	ClustergateEnv []string
	// SharedEtcd stores clustergate's objects in the garden etcd instead of
	// its embedded one, so that StartReplica can add replicas; the
	// APIService's Service then reaches them through a balancer.
	SharedEtcd bool
	// ProcessNode, when set, makes the garden run workloads (nodes.go):
	// kube-scheduler, the workload controllers and a process node.
	ProcessNode *ProcessNodeOptions
	// Installed leaves clustergate out: no process, no RBAC, no APIService.
	// The caller installs the shipped artifacts instead, as pods on the
	// process node (with ProcessNode; see installed.go).
	Installed bool
	// VirtualGarden, with Installed, adds a virtual garden as
	// gardener-operator lays a landscape out (virtualgarden.go): a second
	// kube-apiserver without nodes, where gardener-apiserver is aggregated
	// instead of in the garden, which becomes the runtime cluster.
	VirtualGarden bool
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
	// balanced is where balancer reaches each replica (host:port) by its
	// component name, so that stopping and starting one takes it out and
	// puts it back.
	balanced map[string]string
	// shootForward, the installed way, relays the process node's gateway
	// to the shoot kube-apiserver, for the server's pods (forwardShoot).
	shootForward *balancer
	// gardenShootURL is the shoot kube-apiserver's URL as Gardener's Shoots
	// advertise it: ShootURL, or the installed way shootForward's.
	gardenShootURL string
	// balancers are those Balance started, closed by Stop.
	balancers []*balancer
	// certs are the control plane's CAs and certificates, in pki.
	certs *certificates
	// processNode holds the process node's certificates, with
	// Options.ProcessNode.
	processNode *processNode
	// virtual is the virtual garden, with Options.VirtualGarden.
	virtual *virtualGarden

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
	// ClustergateKubeconfig reaches the garden as clustergate's
	// ServiceAccount: its delegated authentication and authorization.
	ClustergateKubeconfig string
	// DataPlaneURL is the first replica's data plane, whose JWTs the garden
	// kube-apiserver issues (see DataPlaneAudience); DataPlaneCAFile
	// verifies it.
	DataPlaneURL, DataPlaneCAFile string
	// DataPlaneIssuer is the URL of the data plane's one JWT issuer, the
	// garden's service-account issuer.
	DataPlaneIssuer string
	// VirtualGardenKubeconfig reaches the virtual garden's kube-apiserver
	// as system:masters, at VirtualGardenURL, with Options.VirtualGarden.
	VirtualGardenKubeconfig, VirtualGardenURL string
	// TokenExecPlugin is an exec credential plugin that prints a data-plane
	// token of a garden service account: arguments kubeconfig, namespace,
	// service account, audience.
	TokenExecPlugin string
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
		{"workloads", cp.startWorkloads},
		{"virtual garden", cp.startVirtualGarden},
		{"gardener-apiserver", cp.startGardener},
		{"clustergate", cp.startClustergate},
	} {
		if step.name == "clustergate" && opts.Installed {
			continue
		}
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
	for _, b := range append([]*balancer{cp.balancer, cp.shootForward}, cp.balancers...) {
		if b != nil {
			b.close()
		}
	}
}

// ports are the listening ports of the control plane, all on 127.0.0.1.
type ports struct {
	etcd, etcdPeer, garden, shoot, gardenControllers, signer, gardener, clustergate, node, dataPlane int
}

// FreePort is a port of 127.0.0.1 that was free a moment ago, for a
// server started beside the control plane. It is drawn below Linux's
// ephemeral range (32768–60999) and the NodePort range (30000–32767), so
// that no outgoing connection of another component can take it before its
// server listens: a server that listens late, such as the data plane in a
// post-start hook, lost its port that way. A port is handed out once per
// process.
func FreePort() (int, error) {
	const low, high = 20000, 30000
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 200 {
		port := low + rand.IntN(high-low)
		if freePorts.handed[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		freePorts.handed[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port of 127.0.0.1 in [%d, %d)", low, high)
}

// freePorts are the ports FreePort handed out.
var freePorts = struct {
	sync.Mutex
	handed map[int]bool
}{handed: map[int]bool{}}

// allocatePorts picks every port of the control plane.
func allocatePorts() (ports, error) {
	var p ports
	for _, dst := range []*int{&p.etcd, &p.etcdPeer, &p.garden, &p.shoot, &p.gardenControllers, &p.signer, &p.gardener, &p.clustergate, &p.node, &p.dataPlane} {
		port, err := FreePort()
		if err != nil {
			return p, err
		}
		*dst = port
	}
	return p, nil
}

// ShootClientCA is the CA the shoot kube-apiserver trusts for its clients,
// for tests that act as a CSR signer of their own.
func (cp *ControlPlane) ShootClientCA() *CA { return cp.certs.shootClientCA }

// LogDir holds the output of every component, in <component>.log.
func (cp *ControlPlane) LogDir() string { return cp.logs }

// DataDir is the --data-dir of clustergate or of the replica named
// component.
func (cp *ControlPlane) DataDir(component string) string {
	return filepath.Join(cp.opts.Dir, "data", component)
}

// RepoRoot is the clustergate checkout the control plane was started from.
func (cp *ControlPlane) RepoRoot() string { return cp.opts.RepoRoot }
