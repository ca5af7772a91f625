// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
)

// startClustergate applies artifacts/rbac and Istio's CRDs, creates the
// cluster target ShootTargetSecret, starts clustergate-apiserver with the
// identity of its ServiceAccount and registers it through
// artifacts/apiservice.
func (cp *ControlPlane) startClustergate(ctx context.Context) error {
	serving := cp.certs.clustergateServing
	kubeconfig := filepath.Join(cp.opts.Dir, "clustergate.kubeconfig")
	if err := writeKubeconfig(kubeconfig, "garden", cp.GardenURL, cp.certs.gardenCA.CertPEM(), cp.certs.clustergateUser, "clustergate"); err != nil {
		return err
	}
	cp.ClustergateKubeconfig = kubeconfig
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
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, shootKubeconfig, "-n", ServerNamespace, "create", "secret", "generic",
		ShootTargetSecret, "--from-file=kubeconfig=/dev/stdin"); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ServerNamespace, "label", "secret", ShootTargetSecret,
		v1alpha1.LabelClusterTarget+"=true"); err != nil {
		return err
	}
	// The namespaced meaning of the example's debugger level, on the shoot
	// that sessions reach both as a Shoot and as a cluster target.
	if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "apply", "-f",
		filepath.Join(cp.opts.RepoRoot, "artifacts", "examples", "debugger-clusterrole.yaml")); err != nil {
		return err
	}
	accessConfig := cp.opts.SessionAccessConfig
	if accessConfig == "" {
		accessConfig = filepath.Join(cp.opts.RepoRoot, "artifacts", "examples", "session-access.yaml")
	}
	dataPlane, err := cp.setUpDataPlane(ctx)
	if err != nil {
		return err
	}
	// One manifest key for clustergate and its replicas, which verify
	// each other's recordings in a shared bucket.
	manifestKey := filepath.Join(cp.opts.Dir, "recording-manifest.key")
	if err := recording.EnsureManifestKeyFile(manifestKey); err != nil {
		return err
	}
	if err := cp.start("clustergate", "clustergate-apiserver", append(append([]string{
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cp.ports.clustergate),
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--data-dir=" + cp.DataDir("clustergate"),
		"--recording-manifest-key-file=" + manifestKey,
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--gardener-kubeconfig=" + kubeconfig,
		"--gardener-project=" + Project,
		"--namespace=" + ServerNamespace,
		"--session-access-config=" + accessConfig,
		// Session kubeconfigs point at the garden kube-apiserver.
		"--external-url=" + cp.GardenURL,
		"--external-ca-file=" + cp.certs.gardenCA.CertFile,
		// Short sessions for demos and tests.
		"--session-min-ttl=10s",
		// Gardener's outages show within seconds.
		"--gardener-probe-interval=2s",
	}, dataPlane...), append(cp.storageArgs(), cp.opts.ClustergateArgs...)...)...); err != nil {
		return err
	}
	cp.ClustergateURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.clustergate)
	cp.values.ClustergatePort = cp.ports.clustergate
	if cp.opts.SharedEtcd {
		// Replicas may join: the Service reaches them through a balancer,
		// as it would through kube-proxy.
		if cp.balancer, err = newBalancer("127.0.0.1:0"); err != nil {
			return err
		}
		cp.balanced = map[string]string{"clustergate": fmt.Sprintf("127.0.0.1:%d", cp.ports.clustergate)}
		cp.balancer.add(cp.balanced["clustergate"])
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
	if err := cp.waitAPIService(ctx, cp.AdminKubeconfig, "v1alpha1.clustergate.dev"); err != nil {
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

// storageArgs point clustergate at the garden etcd with SharedEtcd.
func (cp *ControlPlane) storageArgs() []string {
	if !cp.opts.SharedEtcd {
		return nil
	}
	return []string{fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", cp.ports.etcd), "--etcd-prefix=/registry-clustergate"}
}
