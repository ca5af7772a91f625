// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ProcessNodeName is the garden's node that runs pods as host processes,
// when Options.ProcessNode is set.
const ProcessNodeName = "process-node"

// ProcessNodeOptions make the garden run workloads: kube-scheduler, the
// kube-controller-manager controllers that Deployments, StatefulSets,
// Services, PodDisruptionBudgets and claims need, and process-kubelet, a
// node that pulls the pods' images from a registry and runs them as host
// processes, each pod in a network namespace of its own.
type ProcessNodeOptions struct {
	// NetworkPrefix names every network namespace and link the node
	// creates (1 to 6 characters); RemoveNetwork removes what is left with
	// it. Pick one no other run uses.
	NetworkPrefix string
	// PodCIDR is the /24 of the pods' addresses; its .1 is the host's
	// gateway. Default 10.244.0.0/24.
	PodCIDR string
}

// processNode is what startWorkloads keeps of the node.
type processNode struct {
	ca, clientCA          *CA
	serving, apiserverKey KeyPair
}

// gardenWorkloadArgs are the garden kube-apiserver's flags for reaching the
// process node's kubelet API (logs, exec) with verified TLS, as
// kube-apiserver-kubelet-client; none without Options.ProcessNode.
func (cp *ControlPlane) gardenWorkloadArgs() ([]string, error) {
	if cp.opts.ProcessNode == nil {
		return nil, nil
	}
	n := &processNode{}
	var err error
	if n.ca, err = NewCA(cp.pki, "process-node-ca", false); err != nil {
		return nil, err
	}
	if n.serving, err = n.ca.ServingCert(cp.pki, "process-node", ProcessNodeName); err != nil {
		return nil, err
	}
	if n.clientCA, err = NewCA(cp.pki, "process-node-client-ca", false); err != nil {
		return nil, err
	}
	if n.apiserverKey, err = n.clientCA.ClientCert(cp.pki, "garden-apiserver-kubelet-client", "kube-apiserver-kubelet-client"); err != nil {
		return nil, err
	}
	cp.processNode = n
	args := []string{
		"--kubelet-certificate-authority=" + n.ca.CertFile,
		"--kubelet-client-certificate=" + n.apiserverKey.CertFile,
		"--kubelet-client-key=" + n.apiserverKey.KeyFile,
		"--kubelet-preferred-address-types=InternalIP",
	}
	if cp.opts.Installed {
		// No kube-proxy runs here, so a Service's ClusterIP leads nowhere:
		// the aggregator must dial the installed APIService's endpoints
		// (pod addresses on the node's bridge) itself. Only then: the
		// endpoint resolver refuses the ExternalName Services that lead
		// to the host processes gardener-apiserver and clustergate.
		args = append(args, "--enable-aggregator-routing=true")
	}
	return args, nil
}

// startWorkloads starts kube-scheduler, the workload controllers and the
// process node in the garden, and waits until the node is Ready; nothing
// without Options.ProcessNode.
func (cp *ControlPlane) startWorkloads(ctx context.Context) error {
	o := cp.opts.ProcessNode
	if o == nil {
		return nil
	}
	var schedulerPort, controllersPort, nodePort int
	for _, p := range []*int{&schedulerPort, &controllersPort, &nodePort} {
		port, err := FreePort()
		if err != nil {
			return err
		}
		*p = port
	}
	kc := cp.AdminKubeconfig
	if err := cp.start("garden-scheduler", "kube-scheduler",
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedulerPort), "--leader-elect=false",
	); err != nil {
		return err
	}
	// Each controller acts as its own service account, with the RBAC a real
	// cluster gives it. The root CA publisher writes kube-root-ca.crt, which
	// every pod's projected service-account volume reads.
	controllers := workloadControllers
	var signing []string
	if cp.opts.Installed {
		// The installed server's sessions have the garden as their cluster
		// target (the one kube-apiserver its pods reach): its CSRs are
		// signed with the garden's client CA, as a cluster's own
		// controller manager signs kubernetes.io/kube-apiserver-client.
		controllers = append(slices.Clone(controllers), "certificatesigningrequest-signing-controller")
		signing = []string{"--cluster-signing-cert-file=" + cp.certs.clientCA.CertFile,
			"--cluster-signing-key-file=" + cp.certs.clientCA.KeyFile}
	}
	if err := cp.start("garden-workload-controller-manager", "kube-controller-manager", append([]string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(controllersPort),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false", "--use-service-account-credentials=true",
		"--root-ca-file=" + cp.certs.gardenCA.CertFile,
		"--cert-dir=" + filepath.Join(cp.opts.Dir, "data", "garden-workload-controller-manager"),
	}, signing...)...); err != nil {
		return err
	}
	cidr := o.PodCIDR
	if cidr == "" {
		cidr = "10.244.0.0/24"
	}
	n := cp.processNode
	if err := cp.start("process-node", "process-kubelet",
		"--kubeconfig="+kc, "--node-name="+ProcessNodeName,
		"--root-dir="+filepath.Join(cp.opts.Dir, "data", "process-node"),
		"--listen=127.0.0.1:"+strconv.Itoa(nodePort),
		"--tls-cert-file="+n.serving.CertFile, "--tls-private-key-file="+n.serving.KeyFile,
		"--client-ca-file="+n.clientCA.CertFile,
		"--pod-cidr="+cidr, "--network-prefix="+o.NetworkPrefix,
		"--apiserver-forward="+strings.TrimPrefix(cp.GardenURL, "https://"),
	); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := cp.Kubectl(ctx, kc, nil, "get", "node", ProcessNodeName,
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err == nil && strings.TrimSpace(string(out)) == "True" {
			return nil
		}
		if err := cp.checkAlive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready after a minute: %w %s", ProcessNodeName, err, out)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// processNodeGateway is the host's address on the process node's bridge,
// the .1 of its pod CIDR.
func (cp *ControlPlane) processNodeGateway() (string, error) {
	if cp.opts.ProcessNode == nil {
		return "", fmt.Errorf("Options.Installed needs Options.ProcessNode")
	}
	cidr := cp.opts.ProcessNode.PodCIDR
	if cidr == "" {
		cidr = "10.244.0.0/24"
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", err
	}
	return prefix.Masked().Addr().Next().String(), nil
}

// workloadControllers are the kube-controller-manager controllers the
// garden's workloads need.
var workloadControllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	"endpoints-controller", "endpointslice-controller",
	"serviceaccount-controller", "root-ca-certificate-publisher-controller",
	"garbage-collector-controller", "disruption-controller",
	"persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller", "pod-garbage-collector-controller",
	// The etcd component's snapshot CronJob.
	"cronjob-controller", "job-controller",
	// The node lifecycle controller lifts the not-ready taint that
	// kube-apiserver puts on every new Node once the node reports Ready;
	// without it nothing is ever scheduled.
	"node-lifecycle-controller",
}

// RemoveNetwork removes every network namespace and link named with
// prefix: what a process node left behind when it was killed. Tests call it
// in a cleanup, also after a failure.
func RemoveNetwork(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("no network prefix")
	}
	var errs []string
	namespaces, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(namespaces), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			if out, err := exec.Command("ip", "netns", "del", f[0]).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("netns %s: %v %s", f[0], err, out))
			}
		}
	}
	for _, link := range NetworkLinks(prefix) {
		if strings.HasPrefix(link, "netns:") {
			errs = append(errs, "namespace "+link+" is still there")
			continue
		}
		if out, err := exec.Command("ip", "link", "del", link).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("link %s: %v %s", link, err, out))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the network of %s: %s", prefix, strings.Join(errs, "; "))
	}
	return nil
}

// NetworkLinks lists the network namespaces ("netns:<name>") and host
// links named with prefix, to check that none is left.
func NetworkLinks(prefix string) []string {
	var names []string
	namespaces, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(namespaces), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			names = append(names, "netns:"+f[0])
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names
}
