// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package install applies the shipped install as users of a release apply
// it: the release's manifest of the highly available layout with the
// cert-manager component (images pinned by digest, as make release renders
// it) under an overlay with the settings the docs name, with kubectl
// apply -k, onto a garden
// whose process node runs the images of make images from a local registry,
// with certificates from cert-manager's own controllers; and the
// virtual-garden layout of a gardener-operator landscape, split between
// that garden as the runtime cluster and a virtual garden without nodes;
// and the Helm chart, published to a registry and installed from it with
// helm.
package install

import (
	"strings"
	"testing"
	"time"
)

// ns is where the shipped artifacts install clustergate.
const ns = "clustergate-system"

// TestInstall installs the highly available layout and uses the API
// through the aggregator.
func TestInstall(t *testing.T) {
	cp, install := startGarden(t, "cluster", false)
	k := gardenKube(t, cp)
	ctx := k.ctx

	install.Gardener, install.ExternalURL = true, cp.GardenURL
	// Short enough for a session that expires during the test, and room
	// for the faults' bursts of sessions of one owner.
	install.ServerArgs = []string{"--session-min-ttl=10s", "--session-max-per-owner=0"}
	if err := cp.InstallHA(ctx, install); err != nil {
		t.Fatal(err)
	}

	k.run("get", "sessions", "-A")
	k.run("create", "namespace", "install")
	k.runIn(`apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata:
  name: stored
  namespace: install
spec:
  shoot: {name: local}
  kubeconfig: {secret: {name: kubeconfig-local}}
`, "create", "-f", "-")
	checkOnEveryReplica(t, k, "install", "gardenerclusterkubeconfigs", "stored")
	// The kubeconfig controller fetches the Shoot's kubeconfig from
	// gardener-apiserver through the garden, into the Secret.
	out := k.try("-n", "install", "wait", "--for=jsonpath={.status.state}=Ready", "gardenerclusterkubeconfig/stored", "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Errorf("GardenerClusterKubeconfig not Ready: %s\n%s", out, k.try("-n", "install", "get", "gck", "stored", "-o", "yaml"))
	} else if got := k.run("-n", "install", "get", "secret", "kubeconfig-local", "-o", "jsonpath={.data.config}"); !strings.Contains(mustBase64(t, got), "clusters:") {
		t.Errorf("secret kubeconfig-local holds no kubeconfig: %q", got)
	}
	gardenTarget(t, k)
	checkSession(t, k, "install")
	waitExpiry := startExpiry(t, k, "install")
	checkExec(t, k, "install")
	t.Logf("forced rotation: new kubeconfig in the Secret %s after the annotation",
		forceRotation(t, k, "install", "stored", "kubeconfig-local").Round(100*time.Millisecond))
	waitExpiry()

	faults := time.Now()
	etcdMemberLoss(t, k)
	leaderLoss(t, k, "install")
	rolloutUnderLoad(t, k, "install")
	t.Logf("faults took %s", time.Since(faults).Round(time.Second))
	replaceEtcdMember(t, k)
	restoreFromSnapshot(t, k, install.EtcdRef)

	// What a failure left, while the garden still answers.
	if t.Failed() {
		k.dump()
	}
}

// checkOnEveryReplica reads an object from each server pod directly,
// past the aggregator: both replicas must serve it from the shared etcd.
func checkOnEveryReplica(t *testing.T, k *kube, namespace, resource, name string) {
	t.Helper()
	ips := strings.Fields(k.run("-n", ns, "get", "pods", "-l", "app.kubernetes.io/name=clustergate",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].status.podIP}"))
	if len(ips) != 2 {
		t.Fatalf("server pods at %v, want 2", ips)
	}
	ca := k.servingCA()
	for _, ip := range ips {
		// The admin's client certificate is from the garden's client CA,
		// which the server trusts through extension-apiserver-authentication.
		got := k.run(append(replicaFlags(ip, ca), "-n", namespace, "get", resource, name, "-o", "jsonpath={.metadata.name}")...)
		if got != name {
			t.Errorf("replica %s: %s/%s reads %q", ip, resource, name, got)
		}
	}
}

// replicaFlags are kubectl's flags that reach the server pod at ip past
// the aggregator; ca is servingCA's file.
func replicaFlags(ip, ca string) []string {
	return []string{"--server=https://" + ip + ":8443", "--certificate-authority=" + ca,
		"--tls-server-name=clustergate.clustergate-system.svc"}
}
