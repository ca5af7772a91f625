// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package workloads tests the garden's workloads: a Deployment, a
// StatefulSet with a claim, a Service and a PodDisruptionBudget whose pods
// process-kubelet runs as host processes from an image in a local registry,
// each in a network namespace with a private address.
package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// TestWorkloads starts a garden with a process node, runs workloads on it
// and checks what a kubelet must do, and that no namespace or link is left.
func TestWorkloads(t *testing.T) {
	if os.Geteuid() != 0 {
		// Failing, not skipping: make test must not pass without it.
		t.Fatal("the process node needs root (network namespaces, chroot): run make test-workloads as root")
	}
	// go test runs in the package's directory; file names in the binary
	// are module paths (make builds with -trimpath).
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "_output", "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "process-kubelet", "gardener-apiserver", "clustergate-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is missing: run hack/tools/build.sh (and make build)", b)
		}
	}
	server := filepath.Join(t.TempDir(), "podserver")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", server, "./testdata/podserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building podserver: %v\n%s", err, out)
	}
	reg := startRegistry(t)
	image := podserverImage(t, reg, server)

	prefix := fmt.Sprintf("cw%04x", rand.IntN(1<<16))
	t.Cleanup(func() {
		if err := localcluster.RemoveNetwork(prefix); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	cp, err := localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(root, "_output", "workloads"), BinDir: bin, RepoRoot: root, Logf: t.Logf,
		// A pod CIDR of its own, so that runs side by side do not share one.
		ProcessNode: &localcluster.ProcessNodeOptions{NetworkPrefix: prefix, PodCIDR: fmt.Sprintf("10.244.%d.0/24", rand.IntN(250)+1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		var in []byte
		if stdin != "" {
			in = []byte(stdin)
		}
		out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, in, args...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}

	applied := time.Now()
	kubectl(strings.ReplaceAll(manifests, "IMAGE", image), "apply", "-f", "-")
	for _, w := range []string{"deployment/web", "statefulset/db", "deployment/slow"} {
		kubectl("", "-n", "wl", "rollout", "status", w, "--timeout=180s")
	}
	t.Logf("web and db ready %s after apply", time.Since(applied).Round(100*time.Millisecond))

	// Creation and readiness times have whole seconds: each latency is
	// within a second.
	var latencies []time.Duration
	for _, p := range getPods(t, kubectl, "app in (web,db,slow)") {
		latencies = append(latencies, p.readyAfter())
		t.Logf("pod %s: created→ready %s", p.Metadata.Name, p.readyAfter())
	}
	slices.Sort(latencies)
	t.Logf("created→ready over %d pods: p50 %s, max %s", len(latencies), latencies[len(latencies)/2], latencies[len(latencies)-1])

	pods := getPods(t, kubectl, "app=web")
	if len(pods) != 2 {
		t.Fatalf("%d web pods, want 2", len(pods))
	}
	ips := []string{pods[0].Status.PodIP, pods[1].Status.PodIP}
	slices.Sort(ips)
	waitFor(t, "endpoints and endpoint slices to list the pods", func() (bool, string) {
		ep := kubectl("", "-n", "wl", "get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}")
		es := kubectl("", "-n", "wl", "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
			"-o", "jsonpath={.items[*].endpoints[*].addresses[*]}")
		return sortedFields(ep) == strings.Join(ips, " ") && sortedFields(es) == strings.Join(ips, " "), ep + " | " + es
	})

	p := pods[0]
	var info struct {
		Env      []string
		Args     []string
		UID, GID int
		Groups   []int
		Cwd      string
		Hostname string
	}
	if err := json.Unmarshal([]byte(get(t, p.Status.PodIP, "/info")), &info); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IMAGE_ENV=from-image", "PASSWORD=s3cret", "GREETING=hello", "POD_IP=" + p.Status.PodIP,
		"POD_NAME=" + p.Metadata.Name, "EXPANDED=hello-world", "KUBERNETES_SERVICE_PORT="} {
		if !slices.ContainsFunc(info.Env, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("env lacks %s: %q", want, info.Env)
		}
	}
	if got, want := strings.Join(info.Args, " "), "--listen=:8080 --term-delay=1s"; got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	if info.UID != 65532 || info.GID != 65532 || info.Cwd != "/tmp" || info.Hostname != p.Metadata.Name {
		t.Errorf("uid %d gid %d cwd %s hostname %s, want 65532 65532 /tmp %s", info.UID, info.GID, info.Cwd, info.Hostname, p.Metadata.Name)
	}
	for _, c := range []struct{ path, want string }{
		{"/etc/secret/password", "s3cret"},
		{"/etc/config/greeting", "hello"},
		{"/etc/podinfo/name", p.Metadata.Name},
		{"/etc/podinfo/labels", `app="web"`},
		{"/var/run/secrets/kubernetes.io/serviceaccount/namespace", "wl"},
		{"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "BEGIN CERTIFICATE"},
		{"/var/run/secrets/kubernetes.io/serviceaccount/token", "eyJ"},
		{"/var/run/secrets/tokens/audience-token", "eyJ"},
	} {
		if got := get(t, p.Status.PodIP, "/file?path="+c.path); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.path, got, c.want)
		}
	}
	get(t, p.Status.PodIP, "/write?path=/scratch/x&data=empty-dir")
	if got := get(t, p.Status.PodIP, "/file?path=/scratch/x"); got != "empty-dir" {
		t.Errorf("emptyDir: read %q", got)
	}
	// Names through the node's DNS: a Service, a StatefulSet member, the
	// kube-apiserver, which the pod's token authenticates at.
	for _, c := range []struct{ name, want string }{
		{"web", strings.Join(ips, " ")},
		{"web.wl.svc.cluster.local", strings.Join(ips, " ")},
		{"db-0.db", "10.244."},
		{"kubernetes.default.svc", "10.244."},
	} {
		if got := get(t, p.Status.PodIP, "/lookup?name="+c.name); strings.Contains(got, "no such host") || !strings.Contains(got, c.want) {
			t.Errorf("lookup %s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := get(t, p.Status.PodIP, "/whoami"); !strings.Contains(got, `"username":"system:serviceaccount:wl:default"`) {
		t.Errorf("whoami: %s", got)
	}
	if logs := kubectl("", "-n", "wl", "logs", p.Metadata.Name); !strings.Contains(logs, "podserver started on "+p.Metadata.Name) {
		t.Errorf("kubectl logs: %q", logs)
	}

	// The claim outlives the pod: a file written by db-0 is there for the
	// next db-0.
	db := getPods(t, kubectl, "app=db")[0]
	get(t, db.Status.PodIP, "/write?path=/data/kept&data=persisted")
	kubectl("", "-n", "wl", "delete", "pod", "db-0", "--grace-period=5")
	kubectl("", "-n", "wl", "rollout", "status", "statefulset/db", "--timeout=120s")
	waitFor(t, "db-0 to come back Ready", func() (bool, string) {
		pods := getPods(t, kubectl, "app=db")
		return len(pods) == 1 && pods[0].ready() && pods[0].Metadata.UID != db.Metadata.UID, ""
	})
	if got := get(t, getPods(t, kubectl, "app=db")[0].Status.PodIP, "/file?path=/data/kept"); got != "persisted" {
		t.Errorf("claim: read %q after the pod's restart", got)
	}

	// A container whose liveness probe fails is restarted.
	waitFor(t, "the flaky container to restart", func() (bool, string) {
		out := kubectl("", "-n", "wl", "get", "pods", "-l", "app=flaky", "-o",
			"jsonpath={.items[0].status.containerStatuses[0].restartCount} {.items[0].status.containerStatuses[0].lastState.terminated.exitCode}")
		f := strings.Fields(out)
		return len(f) == 2 && f[0] != "0", out
	})
	flaky := getPods(t, kubectl, "app=flaky")[0].Metadata.Name
	if logs := kubectl("", "-n", "wl", "logs", flaky, "--previous"); !strings.Contains(logs, "SIGTERM received") {
		t.Errorf("kubectl logs --previous: %q", logs)
	}

	// Containers that end by themselves: a pod's exit code and phase, a
	// Job's completion, and the logs of both afterwards.
	waitFor(t, "pod once to fail with exit code 3", func() (bool, string) {
		out := kubectl("", "-n", "wl", "get", "pod", "once", "-o",
			"jsonpath={.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}")
		return out == "Failed 3", out
	})
	kubectl("", "-n", "wl", "wait", "--for=condition=Complete", "job/job", "--timeout=120s")
	for _, name := range []string{"pod/once", "job/job"} {
		if logs := kubectl("", "-n", "wl", "logs", name); !strings.Contains(logs, "exiting with") {
			t.Errorf("kubectl logs %s: %q", name, logs)
		}
	}

	// Deletion honours the grace period: a server that takes 1 s after
	// SIGTERM exits on its own; one that would take 60 s is killed at 3 s.
	for _, c := range []struct {
		name     string
		grace    string
		min, max time.Duration
	}{
		{name: "web", grace: "10", min: 900 * time.Millisecond, max: 8 * time.Second},
		{name: "slow", grace: "3", min: 2900 * time.Millisecond, max: 10 * time.Second},
	} {
		pod := getPods(t, kubectl, "app="+c.name)[0]
		// kubectl logs -f shows what the process printed after SIGTERM,
		// and ends when the process does.
		var logs e2echeck.SyncBuffer
		followCtx, cancel := context.WithTimeout(ctx, time.Minute)
		follow := exec.CommandContext(followCtx, "kubectl", "--kubeconfig", cp.AdminKubeconfig, "-n", "wl", "logs", "-f", pod.Metadata.Name)
		follow.Stdout = &logs
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "kubectl logs -f to start", func() (bool, string) { return strings.Contains(logs.String(), "podserver started"), "" })
		start := time.Now()
		kubectl("", "-n", "wl", "delete", "pod", pod.Metadata.Name, "--grace-period="+c.grace)
		d := time.Since(start)
		t.Logf("deleting %s with grace %ss took %s", pod.Metadata.Name, c.grace, d.Round(10*time.Millisecond))
		if d < c.min || d > c.max {
			t.Errorf("deleting %s with grace %ss took %s, want %s to %s", pod.Metadata.Name, c.grace, d, c.min, c.max)
		}
		_ = follow.Wait()
		cancel()
		if !strings.Contains(logs.String(), "SIGTERM received") {
			t.Errorf("%s did not see SIGTERM: %q", pod.Metadata.Name, logs.String())
		}
	}

	cp.Stop()
	if left := localcluster.NetworkLinks(prefix); len(left) > 0 {
		t.Errorf("the node left %v", left)
	}
}

// pod is what the test reads of a pod.
type pod struct {
	Metadata struct {
		Name, UID         string
		CreationTimestamp time.Time
	}
	Status struct {
		PodIP      string
		Conditions []struct {
			Type, Status       string
			LastTransitionTime time.Time
		}
	}
}

// ready reports whether the pod is Ready.
func (p pod) ready() bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c struct {
		Type, Status       string
		LastTransitionTime time.Time
	}) bool {
		return c.Type == "Ready" && c.Status == "True"
	})
}

// readyAfter is how long the pod took from creation to Ready.
func (p pod) readyAfter() time.Duration {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			return c.LastTransitionTime.Sub(p.Metadata.CreationTimestamp)
		}
	}
	return -1
}

// getPods lists the running pods of namespace wl with selector.
func getPods(t *testing.T, kubectl func(string, ...string) string, selector string) []pod {
	var list struct{ Items []pod }
	out := kubectl("", "-n", "wl", "get", "pods", "-l", selector, "--field-selector=status.phase=Running", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// podClient gives up on a pod that does not answer, rather than the test's
// whole timeout.
var podClient = &http.Client{Timeout: 30 * time.Second}

// get fetches path from a pod's server over its address.
func get(t *testing.T, ip, path string) string {
	t.Helper()
	resp, err := podClient.Get("http://" + ip + ":8080" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// sortedFields sorts a space-separated list.
func sortedFields(s string) string {
	f := strings.Fields(s)
	slices.Sort(f)
	return strings.Join(f, " ")
}

// waitFor polls cond for up to two minutes.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
