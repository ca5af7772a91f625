// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// The faults a platform team meets on the installed system, measured:
// an etcd member lost under load, the controllers' leader lost, and a
// rolling restart under load.

// serverSelector selects the server's pods.
const serverSelector = "app.kubernetes.io/name=clustergate"

// client is clustergate's clientset as the garden's admin, through the
// aggregator, without client-side rate limits: the loads below are the
// point.
func (k *kube) client() versioned.Interface {
	k.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", k.cp.AdminKubeconfig)
	if err != nil {
		k.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 30*time.Second
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		k.t.Fatal(err)
	}
	return c
}

// session is a Session of the garden target, as sessionManifest.
func session(name string) *v1alpha1.Session {
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			AccessLevel: v1alpha1.AccessLevel{Group: v1alpha1.AccessLevelViewer},
			Target:      v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: "garden-target"}}},
		},
	}
}

// tally counts requests and their failures by message.
type tally struct {
	mu       sync.Mutex
	ok       int
	failures map[string]int
	acked    []string
}

// add records the outcome of one request; a create that succeeded
// records the object's name as acknowledged.
func (c *tally) add(err error, created string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.failures == nil {
			c.failures = map[string]int{}
		}
		// One line per cause, not per object.
		msg := err.Error()
		if created != "" {
			msg = strings.ReplaceAll(msg, `"`+created+`"`, "NAME")
		}
		c.failures[msg]++
		return
	}
	c.ok++
	if created != "" {
		c.acked = append(c.acked, created)
	}
}

// failed is the number of failed requests.
func (c *tally) failed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.failures {
		n += v
	}
	return n
}

// String says how many requests there were and why some failed.
func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, msgs := 0, make([]string, 0, len(c.failures))
	for m, v := range c.failures {
		n += v
		msgs = append(msgs, fmt.Sprintf("%d× %s", v, m))
	}
	sort.Strings(msgs)
	return fmt.Sprintf("%d requests, %d failed %v", c.ok+n, n, msgs)
}

// pause is a client's think time between requests: each Session costs
// the controllers a certificate request on the target, and the machine's
// cores are shared with the whole control plane.
const pause = 100 * time.Millisecond

// load runs f in workers goroutines until stop is called, which returns
// once they all ended.
func load(workers int, f func(worker, i int)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				f(w, i)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// etcdMemberLoss force-deletes the pod of an etcd member that is not the
// leader during a burst of Session creates through the aggregated API: the
// API keeps answering, and every create it acknowledged is stored once the
// member is back. (Losing the leader fails the writes in flight during the
// election with "etcdserver: request timed out", which etcd's clients
// see; docs/operations.md says so.)
func etcdMemberLoss(t *testing.T, k *kube) {
	t.Helper()
	member := etcdFollower(t, k)
	const namespace = "burst"
	k.run("create", "namespace", namespace)
	c := k.client().ClustergateV1alpha1().Sessions(namespace)
	var creates tally
	stop := load(3, func(w, i int) {
		name := fmt.Sprintf("s-%d-%d", w, i)
		_, err := c.Create(context.Background(), session(name), metav1.CreateOptions{})
		creates.add(err, name)
		time.Sleep(pause)
	})
	time.Sleep(2 * time.Second)
	killed := time.Now()
	k.run("-n", ns, "delete", "pod", member, "--grace-period=0", "--force")
	k.run("-n", ns, "wait", "--for=condition=Ready", "pod/"+member, "--timeout=120s")
	back := time.Since(killed)
	time.Sleep(2 * time.Second)
	stop()
	t.Logf("etcd member %s (a follower) killed under a burst of Session creates: back Ready after %s; creates: %s",
		member, back.Round(100*time.Millisecond), &creates)
	if creates.failed() > 0 {
		t.Errorf("creates failed while an etcd member was lost: %s", &creates)
	}
	list, err := c.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, s := range list.Items {
		stored[s.Name] = true
	}
	var lost []string
	for _, name := range creates.acked {
		if !stored[name] {
			lost = append(lost, name)
		}
	}
	t.Logf("%d acknowledged Sessions, %d stored, %d lost", len(creates.acked), len(list.Items), len(lost))
	if len(lost) > 0 {
		t.Errorf("acknowledged Sessions lost: %v", lost)
	}
	k.run("-n", ns, "rollout", "status", "statefulset/clustergate-etcd", "--timeout=120s")
}

// etcdFollower is the name of an etcd member that is not the leader, from
// etcdctl's endpoint status.
func etcdFollower(t *testing.T, k *kube) string {
	t.Helper()
	var status []struct {
		Endpoint string
		Status   struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
			Leader uint64 `json:"leader"`
		}
	}
	out := k.etcdctl("endpoint", "status", "--cluster", "-w", "json")
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("etcdctl endpoint status: %v: %s", err, out)
	}
	for _, s := range status {
		if s.Status.Header.MemberID == s.Status.Leader {
			continue
		}
		if endpoint, err := url.Parse(s.Endpoint); err == nil {
			if member, _, ok := strings.Cut(endpoint.Hostname(), "."); ok {
				return member
			}
		}
	}
	t.Fatalf("etcdctl endpoint status names no follower: %s", out)
	return ""
}

// servers are the names and addresses of the running server pods.
func servers(t *testing.T, k *kube) map[string]string {
	t.Helper()
	out := k.run("-n", ns, "get", "pods", "-l", serverSelector, "--field-selector=status.phase=Running",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.podIP}={.metadata.deletionTimestamp}{"\n"}{end}`)
	pods := map[string]string{}
	for _, line := range strings.Fields(out) {
		// Pods told to stop are no longer servers.
		if f := strings.Split(line, "="); len(f) == 3 && f[2] == "" {
			pods[f[0]] = f[1]
		}
	}
	return pods
}

// leader is the server pod holding the controllers' Lease.
func leader(t *testing.T, k *kube) string {
	t.Helper()
	holder := k.run("-n", ns, "get", "lease", "clustergate-controllers", "-o", "jsonpath={.spec.holderIdentity}")
	pod, _, _ := strings.Cut(holder, "_")
	return pod
}

// watcher is kubectl get -w through sessions/proxy on one replica.
type watcher struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func (w *watcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// output is what the watch printed so far.
func (w *watcher) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// running says whether the watch is still open.
func (w *watcher) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// watchOn watches the ConfigMaps of the default namespace through the
// session namespace/name on the replica at ip, past the aggregator, as
// checkOnEveryReplica reads; it stops with the test.
func watchOn(t *testing.T, k *kube, namespace, name, ip string) *watcher {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watch.kubeconfig")
	if err := k.cp.SessionKubeconfig(k.ctx, k.cp.AdminKubeconfig, namespace, name, path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = ip + ":8443"
		c.Server, c.CertificateAuthority, c.CertificateAuthorityData = u.String(), k.servingCA(), nil
		c.TLSServerName = "clustergate.clustergate-system.svc"
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return startWatch(t, ip, "configmap/kube-root-ca.crt", "--kubeconfig", path, "-n", "default", "get", "configmaps", "-w", "-o", "name")
}

// startWatch runs kubectl get -w with args, stopped with the test, and
// waits until its initial list, which holds first, printed.
func startWatch(t *testing.T, ip, first string, args ...string) *watcher {
	t.Helper()
	w := &watcher{done: make(chan struct{})}
	w.cmd = exec.Command("kubectl", args...)
	w.cmd.Stdout, w.cmd.Stderr = w, w
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); <-w.done })
	e2echeck.Eventually(t, 30*time.Second, "the watch on "+ip+" lists", func() error {
		if !strings.Contains(w.output(), first) {
			return fmt.Errorf("watch output %q", w.output())
		}
		return nil
	})
	return w
}

// carries creates a ConfigMap in the default namespace and checks that
// the watch, still open, reports it.
func carries(t *testing.T, k *kube, w *watcher, configMap string) {
	t.Helper()
	k.run("-n", "default", "create", "configmap", configMap)
	w.reports(t, "configmap/"+configMap)
}

// reports checks that the watch, still open, prints name within 10 s.
func (w *watcher) reports(t *testing.T, name string) {
	t.Helper()
	e2echeck.Eventually(t, 10*time.Second, "the watch reports "+name, func() error {
		if !w.running() {
			return fmt.Errorf("the watch ended: %q", w.output())
		}
		if !strings.Contains(w.output(), name) {
			return fmt.Errorf("watch output %q", w.output())
		}
		return nil
	})
}

// leaderLoss deletes the pod holding the controllers' Lease: the other
// replica takes over, a Session created and a forced rotation asked for
// right after are handled, each rotation costs still exactly one Gardener
// request, and a watch through sessions/proxy on the other replica keeps
// running.
func leaderLoss(t *testing.T, k *kube, namespace string) {
	t.Helper()
	old := leader(t, k)
	pods := servers(t, k)
	if _, ok := pods[old]; !ok || len(pods) != 2 {
		t.Fatalf("the Lease is held by %q, server pods %v", old, pods)
	}
	var survivor string
	for name := range pods {
		if name != old {
			survivor = name
		}
	}
	w := watchOn(t, k, namespace, "first", pods[survivor])

	deleted := time.Now()
	k.run("-n", ns, "delete", "pod", old, "--wait=false")
	// The Lease goes to another replica: the survivor, or the old one's
	// replacement if that campaigns first.
	type takeover struct {
		by    string
		after time.Duration
	}
	moved := make(chan takeover, 1)
	go func() {
		defer close(moved)
		for time.Since(deleted) < 2*time.Minute {
			holder := k.try("-n", ns, "get", "lease", "clustergate-controllers", "-o", "jsonpath={.spec.holderIdentity}")
			if pod, _, _ := strings.Cut(holder, "_"); pod != "" && pod != old && !strings.Contains(pod, " ") {
				moved <- takeover{pod, time.Since(deleted)}
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// Both asked for at once: the stopping leader has let go of its
	// controllers, so the other replica handles them.
	k.runIn(sessionManifest(namespace, "after-failover", "viewer", "1h"), "create", "-f", "-")
	forceRotation(t, k, namespace, "stored", "kubeconfig-local")
	rotated := time.Since(deleted)
	k.run("-n", namespace, "wait", "--for=condition=Ready", "session/after-failover", "--timeout=60s")
	t.Logf("leader %s deleted: a forced rotation asked for right after done %s later, a Session created right after Ready %s later",
		old, rotated.Round(100*time.Millisecond), time.Since(deleted).Round(100*time.Millisecond))
	if m, ok := <-moved; ok {
		t.Logf("leader %s deleted: %s holds the Lease %s later (the surviving replica is %s)", old, m.by, m.after.Round(100*time.Millisecond), survivor)
	} else {
		t.Errorf("the Lease is held by %q two minutes after its holder %s was deleted", leader(t, k), old)
	}
	carries(t, k, w, "after-failover")
	k.run("-n", ns, "rollout", "status", "deployment/clustergate", "--timeout=120s")
}

// rolloutUnderLoad restarts the Deployment while a client loop writes and
// reads Sessions through the aggregated API: no request may fail. A watch
// through sessions/proxy on the replica replaced last keeps running while
// the first one stops.
func rolloutUnderLoad(t *testing.T, k *kube, namespace string) {
	t.Helper()
	before := servers(t, k)
	if len(before) != 2 {
		t.Fatalf("server pods %v, want 2", before)
	}
	watches := map[string]*watcher{}
	for name, ip := range before {
		watches[name] = watchOn(t, k, namespace, "first", ip)
	}
	c := k.client().ClustergateV1alpha1().Sessions(namespace)
	var requests tally
	stop := load(2, func(w, i int) {
		ctx := context.Background()
		if w == 0 {
			name := fmt.Sprintf("roll-%d", i)
			_, err := c.Create(ctx, session(name), metav1.CreateOptions{})
			requests.add(err, name)
			_, err = c.Get(ctx, name, metav1.GetOptions{})
			requests.add(err, "")
		} else {
			_, err := c.List(ctx, metav1.ListOptions{})
			requests.add(err, "")
		}
		time.Sleep(pause)
	})
	start := time.Now()
	k.run("-n", ns, "rollout", "restart", "deployment/clustergate")
	// The first old replica told to stop; the other must still carry its watch.
	var first string
	e2echeck.Eventually(t, 2*time.Minute, "an old replica stopping", func() error {
		for name := range before {
			if _, ok := servers(t, k)[name]; !ok {
				first = name
				return nil
			}
		}
		return fmt.Errorf("both old replicas still serve")
	})
	for name, w := range watches {
		if name != first {
			carries(t, k, w, "during-rollout")
		}
	}
	k.run("-n", ns, "rollout", "status", "deployment/clustergate", "--timeout=300s")
	// The loop runs until the old replicas no longer listen: past their
	// --shutdown-delay-duration and the drain of their requests. (Their
	// processes end later still, once the long-running requests they
	// hold end or --request-timeout passes.)
	e2echeck.Eventually(t, 2*time.Minute, "the old replicas closing their port", func() error {
		for name, ip := range before {
			if conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8443"), time.Second); err == nil {
				conn.Close()
				return fmt.Errorf("%s still listens", name)
			}
		}
		return nil
	})
	took := time.Since(start)
	stop()
	t.Logf("rollout restart under a client loop: done in %s (old replicas no longer listen); %s", took.Round(100*time.Millisecond), &requests)
	if requests.failed() > 0 {
		t.Errorf("requests failed during the rollout: %s", &requests)
	}
}
