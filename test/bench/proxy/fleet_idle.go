// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

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

// standInPod creates execPod on the shoot's stand-in node through c, unless
// an earlier row did, and marks it running, as far as the shoot's
// kube-apiserver can tell.
func standInPod(ctx context.Context, c kubernetes.Interface) error {
	pod, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: execPod},
		Spec: corev1.PodSpec{NodeName: localcluster.NodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "main", Image: "stand-in"}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
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
	url := execURL(cfg)
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
