// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
	"github.com/clustergate/clustergate/test/utils/runbook"
)

// restoreSection is the runbook restoreFromSnapshot follows.
const restoreSection = "### Restore etcd from a snapshot"

// snapshotSlots are the hours of the shipped snapshot CronJobs.
var snapshotSlots = []string{"00", "06", "12", "18"}

// restoreFromSnapshot follows the runbook "Restore etcd from a snapshot"
// of docs/operations.md step by step: the inline commands as written, the
// doc's shell blocks run by bash with the doc's etcd-restore.yaml (its
// image set to etcdImage, as an overlay does). A Session created before
// the snapshot comes back, one created after it is gone with its
// credentials Secret, a watch from before the restore is told to re-list,
// and every replica serves and watches the restored store.
func restoreFromSnapshot(t *testing.T, k *kube, etcdImage string) {
	t.Helper()
	began := time.Now()
	const namespace = "restore"
	k.run("create", "namespace", namespace)
	for _, name := range []string{"kept", "revived"} {
		k.runIn(sessionManifest(namespace, name, "viewer", "1h"), "create", "-f", "-")
		k.run("-n", namespace, "wait", "--for=condition=Ready", "session/"+name, "--timeout=60s")
	}
	revivedSecret := "session-" + k.run("-n", namespace, "get", "session", "revived", "-o", "jsonpath={.metadata.uid}")

	// The snapshot of slot 06, now, from its CronJob's template: etcdctl
	// in the etcd image, through the client Service, with the client
	// certificate.
	start := time.Now()
	k.run("-n", ns, "create", "job", "--from=cronjob/clustergate-etcd-snapshot-06", "snapshot-06-now")
	k.run("-n", ns, "wait", "--for=condition=Complete", "job/snapshot-06-now", "--timeout=120s")
	t.Logf("snapshot job complete in %s", time.Since(start).Round(100*time.Millisecond))

	// Deleted after the snapshot, with its credentials Secret: it comes
	// back, and must work again.
	k.run("-n", namespace, "delete", "session", "revived", "--timeout=60s")
	k.run("-n", ns, "wait", "--for=delete", "secret/"+revivedSecret, "--timeout=60s")
	k.runIn(sessionManifest(namespace, "lost", "viewer", "1h"), "create", "-f", "-")
	k.run("-n", namespace, "wait", "--for=condition=Ready", "session/lost", "--timeout=60s")
	lostSecret := "session-" + k.run("-n", namespace, "get", "session", "lost", "-o", "jsonpath={.metadata.uid}")
	k.run("-n", ns, "get", "secret", lostSecret)
	// What a client that watches Sessions last saw: the list's revision.
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal([]byte(k.run("get", "--raw", "/apis/clustergate.dev/v1alpha1/namespaces/"+namespace+"/sessions")), &list); err != nil || list.ResourceVersion == "" {
		t.Fatalf("the list of Sessions has no resourceVersion: %v", err)
	}
	seen := list.ResourceVersion

	start = time.Now()
	// 1. Stop the writers and the snapshots.
	k.run("-n", ns, "scale", "deployment", "clustergate", "--replicas=0")
	for _, h := range snapshotSlots {
		k.run("-n", ns, "patch", "cronjob", "clustergate-etcd-snapshot-"+h, "-p", `{"spec":{"suspend":true}}`)
	}
	// 2. The slot whose CronJob ran last successfully: 06, by the job above.
	if jobs := k.run("-n", ns, "get", "cronjobs,jobs"); !regexp.MustCompile(`job.batch/snapshot-06-now\s+Complete`).MatchString(jobs) {
		t.Fatalf("no complete snapshot job of slot 06:\n%s", jobs)
	}
	// 3. etcd stopped, its pods gone, its claims deleted.
	k.run("-n", ns, "scale", "statefulset", "clustergate-etcd", "--replicas=0")
	e2echeck.Eventually(t, 2*time.Minute, "the etcd pods gone", func() error {
		if pods := k.run("-n", ns, "get", "pods", "-l", "app.kubernetes.io/name=clustergate-etcd", "-o", "name"); pods != "" {
			return fmt.Errorf("pods left: %s", pods)
		}
		return nil
	})
	k.run("-n", ns, "delete", "pvc", "data-clustergate-etcd-0", "data-clustergate-etcd-1", "data-clustergate-etcd-2")
	// 4. The snapshot restored into a new claim per member.
	dir := t.TempDir()
	restore := regexp.MustCompile(`(?m)^(\s*image:).*$`).ReplaceAllString(runbookBlock(t, restoreSection, "`etcd-restore.yaml`:"), "$1 "+etcdImage)
	if err := os.WriteFile(filepath.Join(dir, "etcd-restore.yaml"), []byte(restore), 0o600); err != nil {
		t.Fatal(err)
	}
	k.sh(dir, runbookBlock(t, restoreSection, "4. Restore the snapshot"))
	restored := time.Since(start)
	// 5. etcd started from the restored data.
	k.run("-n", ns, "scale", "statefulset", "clustergate-etcd", "--replicas=3")
	k.run("-n", ns, "rollout", "status", "statefulset/clustergate-etcd", "--timeout=300s")
	checkEtcdMembers(t, k, "after the restore")
	// 6. The server started; the API answers again.
	k.run("-n", ns, "scale", "deployment", "clustergate", "--replicas=2")
	e2echeck.Eventually(t, 5*time.Minute, "the API answering", func() error {
		if out, err := k.cp.Kubectl(k.ctx, k.cp.AdminKubeconfig, nil, "-n", namespace, "get", "sessions"); err != nil {
			return fmt.Errorf("%s%w", out, err)
		}
		return nil
	})
	down := time.Since(start)
	k.run("-n", ns, "rollout", "status", "deployment/clustergate", "--timeout=300s")
	if got := k.run("get", "apiservice", "v1alpha1.clustergate.dev", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`); got != "True" {
		t.Errorf("APIService Available %q after the restore", got)
	}
	listed := k.run("get", "sessions,gardenerclusterkubeconfigs", "-A", "-o", "name")
	for _, h := range snapshotSlots {
		k.run("-n", ns, "patch", "cronjob", "clustergate-etcd-snapshot-"+h, "-p", `{"spec":{"suspend":false}}`)
	}
	// 7. The credentials Secrets of the sessions the restore dropped.
	k.sh(dir, runbookBlock(t, restoreSection, "7. Delete the credentials Secrets"))
	t.Logf("the runbook \"Restore etcd from a snapshot\" done in %s: the API down %s, of which the restore of three members (steps 1-4) %s",
		time.Since(start).Round(time.Second), down.Round(time.Second), restored.Round(time.Second))

	// What was written before the snapshot is back, what came after is gone.
	for _, want := range []string{"session.clustergate.dev/kept", "session.clustergate.dev/revived", "gardenerclusterkubeconfig.clustergate.dev/stored"} {
		if !strings.Contains(listed, want) {
			t.Errorf("%s is not back after the restore:\n%s", want, listed)
		}
	}
	if strings.Contains(listed, "session.clustergate.dev/lost") {
		t.Errorf("the Session created after the snapshot is back:\n%s", listed)
	}
	if out := k.try("-n", ns, "get", "secret", lostSecret); !strings.Contains(out, "NotFound") {
		t.Errorf("the credentials Secret of the dropped session: %s", out)
	}
	if secrets := k.run("-n", ns, "get", "secrets", "-l", "clustergate.dev/session-name=kept", "-o", "name"); secrets == "" {
		t.Error("step 7 deleted the credentials Secret of a session that was restored")
	}
	// The session deleted after the snapshot is back with new credentials.
	e2echeck.Eventually(t, time.Minute, "the revived session's credentials", func() error {
		ready := k.try("-n", namespace, "get", "session", "revived", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if secret := k.try("-n", ns, "get", "secret", revivedSecret, "-o", "name"); ready != "True" || strings.Contains(secret, "NotFound") {
			return fmt.Errorf("Ready %q, Secret %s", ready, secret)
		}
		return nil
	})
	// A watch from before the restore ends with 410 Gone: its client
	// re-lists rather than waiting for revisions the restored store will
	// reuse for other objects.
	if out := k.try("--request-timeout=30s", "get", "--raw", "/apis/clustergate.dev/v1alpha1/namespaces/"+namespace+"/sessions?watch=1&resourceVersion="+seen); !strings.Contains(out, `"code":410`) {
		t.Errorf("a watch from resourceVersion %s of before the restore: %s", seen, out)
	}
	// Each replica's watch of the store carries a new Session, and so does
	// the aggregated API's.
	watches := map[string]*watcher{"the aggregated API": startWatch(t, "the aggregated API", "session.clustergate.dev/kept",
		"--kubeconfig", k.cp.AdminKubeconfig, "-n", namespace, "get", "sessions", "-w", "-o", "name")}
	ca := k.servingCA()
	for pod, ip := range servers(t, k) {
		watches[pod] = startWatch(t, ip, "session.clustergate.dev/kept", append(replicaFlags(ip, ca),
			"--kubeconfig", k.cp.AdminKubeconfig, "-n", namespace, "get", "sessions", "-w", "-o", "name")...)
	}
	k.runIn(sessionManifest(namespace, "after-restore", "viewer", "1h"), "create", "-f", "-")
	for on, w := range watches {
		w.reports(t, "session.clustergate.dev/after-restore")
		if strings.Contains(w.output(), "/lost") {
			t.Errorf("the watch on %s lists the dropped Session: %s", on, w.output())
		}
	}
	k.run("-n", namespace, "wait", "--for=condition=Ready", "session/after-restore", "--timeout=60s")
	checkEtcdMembers(t, k, "at the end")
	t.Logf("the restore with its objects and checks took %s", time.Since(began).Round(time.Second))
}

// checkEtcdMembers checks that etcd has three started, healthy members.
func checkEtcdMembers(t *testing.T, k *kube, when string) {
	t.Helper()
	if list := k.etcdctl("member", "list"); strings.Count(list, ", started, ") != 3 {
		t.Errorf("%s, etcd members:\n%s", when, list)
	}
	if health := k.etcdctl("endpoint", "health", "--cluster"); strings.Count(health, "is healthy") != 3 {
		t.Errorf("%s, etcd health:\n%s", when, health)
	}
}

// sh runs a shell block of the docs with bash in dir, as the garden's
// admin, and fails the test on errors.
func (k *kube) sh(dir, script string) {
	k.t.Helper()
	cmd := exec.CommandContext(k.ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "KUBECONFIG="+k.cp.AdminKubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		k.t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// runbookBlock is the code block of docs/operations.md after marker in
// section (runbook.Block).
func runbookBlock(t *testing.T, section, marker string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, err := runbook.Block(doc, section, marker)
	if err != nil {
		t.Fatalf("docs/operations.md: %v", err)
	}
	return block
}
