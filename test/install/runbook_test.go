// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// etcdctl runs etcdctl in the member clustergate-etcd-0 with its
// certificate, as docs/operations.md ("etcd") shows.
func (k *kube) etcdctl(args ...string) string {
	k.t.Helper()
	return k.run(etcdctlArgs(args...)...)
}

// etcdctlArgs are kubectl's arguments for etcdctl with args, as etcdctl.
func etcdctlArgs(args ...string) []string {
	return append([]string{"-n", ns, "exec", "clustergate-etcd-0", "--", "etcdctl",
		"--endpoints=https://localhost:2379", "--cacert=/etc/etcd/tls/ca.crt",
		"--cert=/etc/etcd/tls/tls.crt", "--key=/etc/etcd/tls/tls.key"}, args...)
}

// replaceEtcdMember follows the runbook "Replace an etcd member" of
// docs/operations.md for clustergate-etcd-2, step by step, while the API
// keeps answering.
func replaceEtcdMember(t *testing.T, k *kube) {
	t.Helper()
	start := time.Now()
	const member = "clustergate-etcd-2"
	// 1. The lost member's ID, removed.
	var id string
	for _, line := range strings.Split(k.etcdctl("member", "list"), "\n") {
		if f := strings.Split(line, ", "); len(f) > 2 && f[2] == member {
			id = f[0]
		}
	}
	if id == "" {
		t.Fatalf("no member %s in etcdctl member list", member)
	}
	k.etcdctl("member", "remove", id)
	// 2. Added back under the same name; again if the add came while the
	// others elected a new leader and it is not in the list.
	e2echeck.Eventually(t, time.Minute, member+" added", func() error {
		out := k.try(etcdctlArgs("member", "add", member, "--peer-urls=https://"+member+".clustergate-etcd.clustergate-system.svc:2380")...)
		if list := k.try(etcdctlArgs("member", "list")...); !strings.Contains(list, ", unstarted, ") {
			return fmt.Errorf("member add: %s; member list:\n%s", out, list)
		}
		return nil
	})
	// 3. Members join rather than found a cluster.
	k.run("-n", ns, "set", "env", "statefulset/clustergate-etcd", "ETCD_INITIAL_CLUSTER_STATE=existing")
	// 4. An empty volume: the claim, then the pod; again while the new
	// pod waits for the old, terminating claim.
	k.run("-n", ns, "delete", "pvc", "data-"+member, "--wait=false")
	k.run("-n", ns, "delete", "pod", member, "--wait=false")
	e2echeck.Eventually(t, 3*time.Minute, member+" Ready on a new claim", func() error {
		out := k.try("-n", ns, "get", "pod", member, "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="Ready")].status}`)
		if out == "Running True" {
			return nil
		}
		if strings.HasPrefix(out, "Pending") {
			if claim := k.try("-n", ns, "get", "pvc", "data-"+member, "-o", "jsonpath={.metadata.deletionTimestamp}"); claim != "" && !strings.Contains(claim, "NotFound") {
				k.try("-n", ns, "delete", "pod", member, "--wait=false")
			}
		}
		return fmt.Errorf("pod %s: %s", member, out)
	})
	k.run("-n", ns, "rollout", "status", "statefulset/clustergate-etcd", "--timeout=300s")
	// 5. Three members started and healthy.
	list := k.etcdctl("member", "list")
	if n := strings.Count(list, ", started, "); n != 3 {
		t.Errorf("after the replacement, %d members started:\n%s", n, list)
	}
	if health := k.etcdctl("endpoint", "health", "--cluster"); strings.Count(health, "is healthy") != 3 {
		t.Errorf("after the replacement:\n%s", health)
	}
	k.run("get", "sessions", "-A")
	t.Logf("the runbook \"Replace an etcd member\" done in %s", time.Since(start).Round(time.Second))
}
