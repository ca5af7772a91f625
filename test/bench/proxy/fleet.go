// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// Targets of the fleet rows, printed beside them.
const (
	targetKiBPerWatch = 32
	targetCutP99      = 100 * time.Millisecond
)

// spreadClients and spreadDuration shape the load whose spread over the
// replicas the bench reports.
const (
	spreadClients  = 50
	spreadDuration = 10 * time.Second
)

// fleetOnly skips every row but the fleet's.
var fleetOnly = flag.Bool("fleet-only", false, "measure only the fleet rows: two replicas, the spread of requests over them, idle streams")

// replica is one clustergate replica as the bench measures it.
type replica struct {
	// name is its component name; url where it serves; dataPlane where
	// its data plane listens, host:port.
	name, url, dataPlane string
}

// fleet adds a second replica to the first and measures what a fleet of
// sessions asks of them: how the requests of concurrent clients spread
// over the replicas, on the aggregated path and on the data plane, and
// streams idle watches through the data planes of both until their
// session expires, with each replica's memory and processor time while
// they are open and how soon after expiry each one closed them.
func fleet(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, streams int) ([]row, error) {
	if err := raiseFileLimit(); err != nil {
		return nil, err
	}
	second, err := cp.StartReplica(ctx, "clustergate-2")
	if err != nil {
		return nil, err
	}
	replicas := []replica{
		{name: "clustergate", url: cp.ClustergateURL, dataPlane: strings.TrimPrefix(cp.DataPlaneURL, "https://")},
		{name: second.Name, url: second.URL, dataPlane: strings.TrimPrefix(second.DataPlaneURL, "https://")},
	}
	rows, aggregated, err := spread(ctx, cp, client, gardenCfg, replicas)
	if err != nil {
		return nil, err
	}
	if streams == 0 {
		return rows, nil
	}
	idle, err := idleOnReplicas(ctx, cp, client, gardenCfg, replicas, streams)
	if rows = append(rows, idle...); err != nil {
		return rows, err
	}
	// Last: the memory of streams the replicas let go stays mapped.
	a, err := idleAggregated(ctx, cp, replicas, aggregated)
	return append(rows, a), err
}

// raiseFileLimit lifts the bench's soft limit of open files to its hard
// one: every watch is a stream of an HTTP/2 connection, but the client
// opens a connection per few hundred streams and per concurrent client.
func raiseFileLimit() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	l.Cur = l.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}

// spread runs spreadClients clients, each on a connection of its own,
// sending small GETs for spreadDuration, first through the whole
// aggregated path (kube-apiserver reaches the replicas through the
// Service's connection balancer), then through a connection balancer in
// front of the replicas' data planes, and reports which replica served
// how many of them. It returns a client of the whole path's session too.
func spread(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, replicas []replica) ([]row, kubernetes.Interface, error) {
	s, err := openSession(ctx, client, "spread", 10*time.Minute, owner)
	if err != nil {
		return nil, nil, err
	}
	dp, err := openSession(ctx, client, "spread-data-plane", 10*time.Minute, dataPlaneOwner)
	if err != nil {
		return nil, nil, err
	}
	paths, err := clients(ctx, cp, gardenCfg, s, dp)
	if err != nil {
		return nil, nil, err
	}
	var backends []string
	for _, r := range replicas {
		backends = append(backends, r.dataPlane)
	}
	balanced, err := cp.Balance(backends...)
	if err != nil {
		return nil, nil, err
	}
	aggregated := paths[whole].cfg
	balancedDataPlane := rest.CopyConfig(paths[dataPlane].cfg)
	balancedDataPlane.Host = "https://" + balanced + v1alpha1.DataPlaneSessionPath(namespace, dp.Name) + "/"
	var rows []row
	for _, way := range []struct {
		name string
		cfg  *rest.Config
	}{{"aggregated path", aggregated}, {"data plane behind a connection balancer", balancedDataPlane}} {
		before, err := servedByReplica(ctx, cp, replicas)
		if err != nil {
			return nil, nil, err
		}
		cpuBefore := cpuByReplica(cp, replicas)
		ok, failed, err := concurrentGets(ctx, way.cfg)
		if err != nil {
			return nil, nil, err
		}
		after, err := servedByReplica(ctx, cp, replicas)
		if err != nil {
			return nil, nil, err
		}
		cpuAfter := cpuByReplica(cp, replicas)
		var shares []string
		for i, r := range replicas {
			served := after[i] - before[i]
			shares = append(shares, fmt.Sprintf("%s %.0f%% (%.0f requests, %v CPU)", r.name, 100*served/float64(ok+failed), served, (cpuAfter[i]-cpuBefore[i]).Round(10*time.Millisecond)))
		}
		rows = append(rows, row{name: fmt.Sprintf("%d concurrent clients, %v of small GETs through the %s: share served by each replica", spreadClients, spreadDuration, way.name),
			cells: [ways]string{dataPlane: fmt.Sprintf("%d requests, %d errors", ok, failed)}, ratio: strings.Join(shares, "; ")})
	}
	return rows, paths[whole].client, nil
}

// aggregatedWatches is how many idle watches idleAggregated holds.
const aggregatedWatches = 1000

// idleAggregated holds aggregatedWatches idle watches open through the
// whole aggregated path and reports the Go memory per watch of the
// replicas together (the aggregator opens a connection per 100 streams,
// which the Service balances), then closes them.
func idleAggregated(ctx context.Context, cp *localcluster.ControlPlane, replicas []replica, c kubernetes.Interface) (row, error) {
	footprints := func() (footprint, error) {
		var sum footprint
		for _, r := range replicas {
			f, err := footprintOf(ctx, cp, r)
			if err != nil {
				return footprint{}, err
			}
			sum.rssKiB, sum.heapBytes, sum.stackBytes, sum.goroutines = sum.rssKiB+f.rssKiB, sum.heapBytes+f.heapBytes, sum.stackBytes+f.stackBytes, sum.goroutines+f.goroutines
		}
		return sum, nil
	}
	// The expired streams are gone first.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		open := 0.0
		for _, r := range replicas {
			m, err := metrics(ctx, cp, r)
			if err != nil {
				return row{}, err
			}
			open += m["clustergate_proxy_open_requests"]
		}
		if open == 0 {
			break
		}
	}
	// ... and so are their connections and goroutines, which the clients
	// close a little later: a baseline taken while they still go would
	// make the watches' memory negative.
	before, err := footprints()
	for deadline := time.Now().Add(time.Minute); err == nil && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		var now footprint
		if now, err = footprints(); err == nil && before.goroutines-now.goroutines < 10 {
			before = now
			break
		}
		before = now
	}
	if err != nil {
		return row{}, err
	}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	if _, err := openWatchesConcurrently(watchCtx, c, aggregatedWatches); err != nil {
		return row{}, err
	}
	time.Sleep(5 * time.Second)
	after, err := footprints()
	if err != nil {
		return row{}, err
	}
	for _, r := range replicas {
		if err := saveProfiles(ctx, cp, r, "aggregated"); err != nil {
			return row{}, err
		}
	}
	n := float64(aggregatedWatches)
	return row{name: fmt.Sprintf("memory per idle watch through the aggregated path (%d open, the replicas together): RSS (pages the expired streams freed reused) / Go heap / goroutine stacks; goroutines per watch", aggregatedWatches),
		cells: [ways]string{whole: fmt.Sprintf("%s / %.1f KiB / %.1f KiB; %.2f", rssPerWatch(before.rssKiB, after.rssKiB, aggregatedWatches), (after.heapBytes-before.heapBytes)/n/1024,
			(after.stackBytes-before.stackBytes)/n/1024, (after.goroutines-before.goroutines)/n)},
		ratio: fmt.Sprintf("target ≤ %d KiB", targetKiBPerWatch)}, nil
}

// rssPerWatch is the growth of RSS from before to after per watch of n.
// After many streams were cut, the runtime hands their pages back to the
// system in the background, and RSS may fall while the watches open: then
// it says nothing of them.
func rssPerWatch(before, after, n int) string {
	if after < before {
		return "n/a (fell: the cut streams' pages were returned meanwhile)"
	}
	return fmt.Sprintf("%.1f KiB", float64(after-before)/float64(n))
}

// concurrentGets runs spreadClients clients of cfg, each with a connection
// of its own, sending small GETs for spreadDuration, and counts the
// answered and failed ones.
func concurrentGets(ctx context.Context, cfg *rest.Config) (ok, failed int, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(spreadDuration)
	for range spreadClients {
		c := rest.CopyConfig(cfg)
		// A dialer of its own keeps client-go from sharing one cached
		// transport, and so one connection, between the clients.
		c.Dial = (&net.Dialer{}).DialContext
		kube, err := kubernetes.NewForConfig(c)
		if err != nil {
			return 0, 0, err
		}
		wg.Go(func() {
			var o, f int
			for time.Now().Before(deadline) {
				if _, err := kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
					f++
				} else {
					o++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			ok, failed = ok+o, failed+f
		})
	}
	wg.Wait()
	return ok, failed, nil
}

// servedByReplica is the number of proxied requests each replica closed
// so far, from its clustergate_proxy_closed_requests_total.
func servedByReplica(ctx context.Context, cp *localcluster.ControlPlane, replicas []replica) ([]float64, error) {
	var served []float64
	for _, r := range replicas {
		m, err := metrics(ctx, cp, r)
		if err != nil {
			return nil, err
		}
		served = append(served, m["clustergate_proxy_closed_requests_total"])
	}
	return served, nil
}

// metrics reads a replica's /metrics as the front proxy's admin, each
// metric summed over its labels.
func metrics(ctx context.Context, cp *localcluster.ControlPlane, r replica) (map[string]float64, error) {
	body, err := debugGet(ctx, cp, r, "/metrics")
	if err != nil {
		return nil, err
	}
	sums := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(body))
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			_, rest, _ = strings.Cut(line[i:], "} ")
			name = line[:i]
		}
		value, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sums[name] += v
		}
	}
	return sums, scanner.Err()
}

// debugGet GETs path of a replica as the front proxy's admin.
func debugGet(ctx context.Context, cp *localcluster.ControlPlane, r replica, path string) ([]byte, error) {
	httpClient, err := rest.HTTPClientFor(cp.FrontProxyConfig(r.url, "admin", "system:masters", "system:authenticated"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s of %s: %s: %s", path, r.name, resp.Status, body)
	}
	return body, nil
}

// cpuByReplica is the processor time each replica used so far; 0,
// reported, when unreadable.
func cpuByReplica(cp *localcluster.ControlPlane, replicas []replica) []time.Duration {
	var cpu []time.Duration
	for _, r := range replicas {
		t, err := cp.CPUTime(r.name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		cpu = append(cpu, t)
	}
	return cpu
}

// footprint is what a replica holds at one moment.
type footprint struct {
	rssKiB                int
	heapBytes, stackBytes float64
	goroutines            float64
}

// footprintOf is what replica r holds: its live heap after a collection
// (which its heap profile's gc=1 asks for), robust to the pages that
// streams let go and others reuse, unlike the heap in use and RSS.
func footprintOf(ctx context.Context, cp *localcluster.ControlPlane, r replica) (footprint, error) {
	if _, err := debugGet(ctx, cp, r, "/debug/pprof/heap?gc=1"); err != nil {
		return footprint{}, err
	}
	m, err := metrics(ctx, cp, r)
	if err != nil {
		return footprint{}, err
	}
	rss, err := cp.RSSKiB(r.name)
	return footprint{rssKiB: rss, heapBytes: m["go_memstats_heap_alloc_bytes"], stackBytes: m["go_memstats_stack_inuse_bytes"], goroutines: m["go_goroutines"]}, err
}

// idleOnReplicas holds streams idle watches open through the data planes
// of the replicas, an equal share on each, of one short session; measures
// each replica's memory per watch and processor time; saves each one's
// heap profile and goroutine dump under _output/bench-proxy/profiles; and
// waits for the session's expiry to end them all, with the first
// replica's processor profile over the cut.
func idleOnReplicas(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, replicas []replica, streams int) ([]row, error) {
	// Long enough to open them all on a loaded machine.
	ttl := 2*time.Minute + time.Duration(streams)*15*time.Millisecond
	short, err := openSession(ctx, client, "expiring", ttl, dataPlaneOwner)
	if err != nil {
		return nil, err
	}
	paths, err := clients(ctx, cp, gardenCfg, short, short)
	if err != nil {
		return nil, err
	}
	var before []footprint
	for _, r := range replicas {
		f, err := footprintOf(ctx, cp, r)
		if err != nil {
			return nil, err
		}
		before = append(before, f)
	}
	if err := standInPod(ctx, paths[targetDirect].client); err != nil {
		return nil, err
	}
	cpuBefore := cpuByReplica(cp, replicas)
	ended, execEnded := make([]<-chan time.Time, len(replicas)), make([]<-chan time.Time, len(replicas))
	share := streams / len(replicas)
	execs := share * execPercent / 100
	var cfgs []*rest.Config
	for i, r := range replicas {
		cfg := rest.CopyConfig(paths[dataPlane].cfg)
		cfg.Host = "https://" + r.dataPlane + v1alpha1.DataPlaneSessionPath(namespace, short.Name) + "/"
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		if ended[i], err = openWatchesConcurrently(ctx, c, share-execs); err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	cpuOpened := cpuByReplica(cp, replicas)
	var watching []footprint
	for _, r := range replicas {
		f, err := footprintOf(ctx, cp, r)
		if err != nil {
			return nil, err
		}
		watching = append(watching, f)
	}
	for i := range replicas {
		if execEnded[i], err = openExecs(ctx, cfgs[i], execs); err != nil {
			return nil, err
		}
	}
	const hold = 10 * time.Second
	time.Sleep(hold)
	cpuHeld := cpuByReplica(cp, replicas)
	// Exec streams that failed end at once, long before expiry.
	failedExecs := make([]int, len(replicas))
	for i := range replicas {
		failedExecs[i] = len(execEnded[i])
		for range failedExecs[i] {
			<-execEnded[i]
		}
	}
	dir := profilesDir(cp)
	var rows []row
	var after []footprint
	for i, r := range replicas {
		f, err := footprintOf(ctx, cp, r)
		if err != nil {
			return nil, err
		}
		after = append(after, f)
		if err := saveProfiles(ctx, cp, r, strconv.Itoa(share)); err != nil {
			return nil, err
		}
		b, w, a := before[i], watching[i], after[i]
		perStream := func(b, a footprint, n int) string {
			return fmt.Sprintf("%.1f KiB (%d → %d MiB) / %.1f KiB / %.1f KiB; %.2f", float64(a.rssKiB-b.rssKiB)/float64(n), b.rssKiB/1024, a.rssKiB/1024,
				(a.heapBytes-b.heapBytes)/float64(n)/1024, (a.stackBytes-b.stackBytes)/float64(n)/1024, (a.goroutines-b.goroutines)/float64(n))
		}
		rows = append(rows,
			row{name: fmt.Sprintf("%s: memory per idle watch (%d open on it): RSS / Go heap / goroutine stacks; goroutines per watch", r.name, share-execs),
				cells: [ways]string{dataPlane: perStream(b, w, share-execs)}, ratio: fmt.Sprintf("target ≤ %d KiB", targetKiBPerWatch)},
			row{name: fmt.Sprintf("%s: memory per idle exec stream (%d more, recorded): RSS / Go heap / goroutine stacks; goroutines per stream", r.name, execs-failedExecs[i]),
				cells: [ways]string{dataPlane: perStream(w, a, max(execs-failedExecs[i], 1))}},
			row{name: fmt.Sprintf("%s: processor time opening %d watches / then opening the exec streams and holding all idle %v", r.name, share-execs, hold),
				cells: [ways]string{dataPlane: fmt.Sprintf("%v (%.0f µs per watch) / %v", (cpuOpened[i] - cpuBefore[i]).Round(10*time.Millisecond),
					float64((cpuOpened[i]-cpuBefore[i]).Microseconds())/float64(share-execs), (cpuHeld[i] - cpuOpened[i]).Round(10*time.Millisecond))}})
	}
	// The processor time of the cut: from a moment before expiry until
	// the last stream closed.
	time.Sleep(time.Until(short.Status.ExpiresAt.Add(-time.Second)))
	cpuBeforeCut := cpuByReplica(cp, replicas)
	// The first replica's processor profile over the cut.
	profiled := make(chan error, 1)
	go func() {
		body, err := debugGet(ctx, cp, replicas[0], "/debug/pprof/profile?seconds=4")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d-cut.pprof", replicas[0].name, share)), body, 0o644)
		}
		profiled <- err
	}()
	cuts, execCuts := make([][]time.Duration, len(replicas)), make([][]time.Duration, len(replicas))
	for i := range replicas {
		for range share - execs {
			cuts[i] = append(cuts[i], (<-ended[i]).Sub(short.Status.ExpiresAt.Time))
		}
		for range execs - failedExecs[i] {
			execCuts[i] = append(execCuts[i], (<-execEnded[i]).Sub(short.Status.ExpiresAt.Time))
		}
	}
	cpuCut := cpuByReplica(cp, replicas)
	if err := <-profiled; err != nil {
		return nil, err
	}
	for i, r := range replicas {
		rows = append(rows, row{name: fmt.Sprintf("%s: expiresAt → watch closed, %d watches: p50 / p99 / last; the replica's processor time for the cut of all its streams", r.name, share-execs),
			cells: [ways]string{dataPlane: fmt.Sprintf("%s; %v (%.0f µs per stream)", percentiles(cuts[i]),
				(cpuCut[i] - cpuBeforeCut[i]).Round(10*time.Millisecond), float64((cpuCut[i]-cpuBeforeCut[i]).Microseconds())/float64(share))},
			ratio: fmt.Sprintf("p99 target ≤ %v", targetCutP99)})
		if execs > 0 {
			rows = append(rows, row{name: fmt.Sprintf("%s: expiresAt → exec stream closed, %d idle `cat` over WebSocket (%d failed to open): p50 / p99 / last", r.name, execs, failedExecs[i]),
				cells: [ways]string{dataPlane: percentiles(execCuts[i])}, ratio: fmt.Sprintf("p99 target ≤ %v", targetCutP99)})
		}
	}
	return rows, nil
}

// profilesDir is where the bench saves the replicas' profiles.
func profilesDir(cp *localcluster.ControlPlane) string {
	return filepath.Join(cp.RepoRoot(), "_output", "bench-proxy", "profiles")
}

// saveProfiles saves a replica's heap profile and goroutine dump in
// profilesDir, their names marked with what it held.
func saveProfiles(ctx context.Context, cp *localcluster.ControlPlane, r replica, held string) error {
	if err := os.MkdirAll(profilesDir(cp), 0o755); err != nil {
		return err
	}
	for _, p := range []struct{ file, path string }{{"heap.pprof", "/debug/pprof/heap?gc=1"}, {"goroutine.txt", "/debug/pprof/goroutine?debug=1"}} {
		body, err := debugGet(ctx, cp, r, p.path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(profilesDir(cp), fmt.Sprintf("%s-%s-%s", r.name, held, p.file)), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// percentiles prints the p50, p99 and largest of d; "none" when empty.
func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	slices.Sort(d)
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("%s / %s / %s", ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1]))
}

// execPercent of the streams on each replica are exec streams; execPod is
// the stand-in pod they run in, on the shoot's stand-in node.
const (
	execPercent = 5
	execPod     = "bench-exec"
)

// standInPod creates execPod on the shoot's stand-in node through c and
// marks it running, as far as the shoot's kube-apiserver can tell.
func standInPod(ctx context.Context, c kubernetes.Interface) error {
	pod, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: execPod},
		Spec: corev1.PodSpec{NodeName: localcluster.NodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "main", Image: "stand-in"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	pod.Status.Phase = corev1.PodRunning
	_, err = c.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// openExecs starts n exec streams of `cat` in execPod through cfg, a data
// plane's URL of a session, over WebSocket as kubectl does, their input
// open and idle; each sends the moment it ended.
func openExecs(ctx context.Context, cfg *rest.Config, n int) (<-chan time.Time, error) {
	ended := make(chan time.Time, n)
	url := cfg.Host + "api/v1/namespaces/default/pods/" + execPod + "/exec?command=cat&stdin=true&stdout=true&container=main"
	for range n {
		e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, url)
		if err != nil {
			return nil, err
		}
		idle, _ := io.Pipe()
		go func() {
			_ = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: idle, Stdout: io.Discard})
			ended <- time.Now()
		}()
	}
	return ended, nil
}

// openWatchesConcurrently opens n idle watches through c, 32 at a time;
// each sends the moment it ended.
func openWatchesConcurrently(ctx context.Context, c kubernetes.Interface, n int) (<-chan time.Time, error) {
	ended := make(chan time.Time, n)
	errs := make(chan error, n)
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range next {
				w, err := c.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=none"})
				if err != nil {
					errs <- err
					continue
				}
				go func() {
					for range w.ResultChan() {
					}
					ended <- time.Now()
				}()
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	close(errs)
	return ended, <-errs
}
