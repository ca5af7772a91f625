// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// startKubeAPIServers issues the certificates and starts etcd, the garden and
// the shoot kube-apiservers (one etcd, two prefixes) and the shoot's stand-in
// node; it writes the admin kubeconfigs of both clusters.
func (cp *ControlPlane) startKubeAPIServers(ctx context.Context) error {
	var err error
	if cp.ports, err = allocatePorts(); err != nil {
		return err
	}
	var shootIPs []net.IP
	if cp.opts.Installed {
		// The installed server's pods reach the shoot on the process
		// node's gateway (forwardShoot).
		gw, err := cp.processNodeGateway()
		if err != nil {
			return err
		}
		shootIPs = append(shootIPs, net.ParseIP(gw))
	}
	if cp.certs, err = issueCertificates(cp.pki, shootIPs...); err != nil {
		return err
	}
	c := cp.certs

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

	if err := cp.startKubeAPIServer("garden-apiserver", cp.ports.garden, c.gardenServing, c.clientCA, c.serviceAccount, "/registry-garden",
		aggregatorArgs(c.frontProxyCA, c.frontProxyClient)...); err != nil {
		return err
	}
	auditPolicy := filepath.Join(cp.opts.Dir, "shoot-audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(shootAuditPolicy), 0o600); err != nil {
		return err
	}
	cp.ShootAuditLog = filepath.Join(cp.logs, "shoot-audit.log")
	if err := cp.startKubeAPIServer("shoot-apiserver", cp.ports.shoot, c.shootServing, c.shootClientCA, c.serviceAccount, "/registry-shoot",
		"--audit-policy-file="+auditPolicy, "--audit-log-path="+cp.ShootAuditLog, "--audit-log-format=json",
		"--kubelet-certificate-authority="+c.nodeCA.CertFile,
		"--kubelet-client-certificate="+c.kubeletClient.CertFile,
		"--kubelet-client-key="+c.kubeletClient.KeyFile,
		"--kubelet-preferred-address-types=InternalIP",
	); err != nil {
		return err
	}
	if err := cp.start("node", "node", fmt.Sprintf("--listen=127.0.0.1:%d", cp.ports.node),
		"--tls-cert-file="+c.nodeServing.CertFile, "--tls-private-key-file="+c.nodeServing.KeyFile,
		"--client-ca-file="+c.shootClientCA.CertFile); err != nil {
		return err
	}

	cp.GardenURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.garden)
	cp.ShootURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.shoot)
	cp.AdminKubeconfig = filepath.Join(cp.opts.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(cp.AdminKubeconfig, "garden", cp.GardenURL, c.gardenCA.CertPEM(), c.gardenAdmin, "admin"); err != nil {
		return err
	}
	cp.ShootKubeconfig = filepath.Join(cp.opts.Dir, "shoot.kubeconfig")
	if err := writeKubeconfig(cp.ShootKubeconfig, "shoot", cp.ShootURL, c.shootCA.CertPEM(), c.shootAdmin, "admin"); err != nil {
		return err
	}
	for _, kc := range []string{cp.AdminKubeconfig, cp.ShootKubeconfig} {
		if err := cp.waitReady(ctx, kc); err != nil {
			return err
		}
	}

	// Values for the fixtures that need the shoot's CAs.
	cp.values.ShootServingCA = string(c.shootCA.CertPEM())
	cp.values.ShootClientCACert = base64File(c.shootClientCA.CertFile)
	cp.values.ShootClientCAKey = base64File(c.shootClientCA.KeyFile)
	if err := cp.applyFixture(ctx, cp.ShootKubeconfig, "shoot-rbac.yaml"); err != nil {
		return err
	}
	return cp.registerNode(ctx)
}

// startKubeAPIServer starts kube-apiserver name on the control plane's etcd
// under prefix, serving on 127.0.0.1:port with serving, trusting clientCA
// for its clients and signing service-account tokens with serviceAccount's
// key; extra are further flags.
func (cp *ControlPlane) startKubeAPIServer(name string, port int, serving KeyPair, clientCA, serviceAccount *CA, prefix string, extra ...string) error {
	args := []string{
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcd), "--etcd-prefix=" + prefix,
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--client-ca-file=" + clientCA.CertFile,
		"--authorization-mode=RBAC",
		// Each kube-apiserver is an OIDC issuer of its service
		// account tokens at its own URL, whose discovery document and
		// keys it serves: the garden's is the data plane's issuer.
		"--service-account-issuer=" + issuerURL(port),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-jwks-uri=" + issuerURL(port) + "/openid/v1/jwks",
		"--service-account-key-file=" + serviceAccount.KeyFile,
		"--service-account-signing-key-file=" + serviceAccount.KeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(cp.opts.Dir, "data", name),
	}
	if name == "garden-apiserver" {
		workload, err := cp.gardenWorkloadArgs()
		if err != nil {
			return err
		}
		args = append(args, workload...)
	}
	return cp.start(name, "kube-apiserver", append(args, extra...)...)
}

// aggregatorArgs are a kube-apiserver's flags for its aggregator: it
// forwards requests to aggregated servers with client, a certificate of
// frontProxyCA, which they trust through extension-apiserver-authentication.
func aggregatorArgs(frontProxyCA *CA, client KeyPair) []string {
	return []string{
		"--requestheader-client-ca-file=" + frontProxyCA.CertFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + client.CertFile,
		"--proxy-client-key-file=" + client.KeyFile,
	}
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
	// In the garden: aggregated ClusterRoles (clustergate's read rules join
	// "view"), namespace deletion, and the usage of ResourceQuotas, which
	// clustergate's admission enforces for its own resources.
	// A new quota's usage of a resource the controller did not know yet
	// (clustergate registers after it starts) is computed at the next full
	// sync: every 15 s here, not every 5 minutes.
	// Each controller acts as its own service account with the RBAC a real
	// cluster gives it: the namespace controller may delete every resource
	// but holds no custom verbs such as clustergate's "revoke".
	if err := cp.startControllerManager("garden-controller-manager", cp.AdminKubeconfig, cp.ports.gardenControllers,
		"clusterrole-aggregation-controller,namespace-controller,resourcequota-controller",
		"--resource-quota-sync-period=15s", "--use-service-account-credentials=true"); err != nil {
		return err
	}
	// In the shoot: the CSR signer, signing with the shoot's client CA, so
	// that certificates minted for Sessions authenticate at the shoot; and
	// aggregated ClusterRoles, so that "view" and "edit" hold their rules.
	return cp.startControllerManager("shoot-controller-manager", cp.ShootKubeconfig, cp.ports.signer,
		"certificatesigningrequest-signing-controller,clusterrole-aggregation-controller",
		"--cluster-signing-cert-file="+cp.certs.shootClientCA.CertFile,
		"--cluster-signing-key-file="+cp.certs.shootClientCA.KeyFile)
}

// startControllerManager starts kube-controller-manager name against the
// cluster of kubeconfig, on 127.0.0.1:port, with only controllers (a
// comma-separated list) and no leader election.
func (cp *ControlPlane) startControllerManager(name, kubeconfig string, port int, controllers string, extra ...string) error {
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

// issuerURL is the service-account issuer of the kube-apiserver on port.
func issuerURL(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) }
