// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// floorCuts is how many times each server cuts -floor-watches streams. One
// garbage collection of clustergate's caches (tens of milliseconds) inside
// or outside a cut's window of about 170 ms moved a single cut's figure by
// 60-100 µs per stream at 500 streams: the row is the median of several.
var floorCuts = flag.Int("floor-cuts", 5, "cuts of -floor-watches idle watches by each server, for the median processor time per stream cut")

// cutGap is the time between one session's expiry and the next: the
// controller's status write and the deletion of the credentials after an
// expiry are done well before it.
const cutGap = 10 * time.Second

// idleFloorRows hold *floorWatches idle watches through each path of the
// pairs and report the growth of each server's anonymous resident memory
// per watch. Then each server cuts *floorWatches streams *floorCuts times:
// clustergate's on the data plane at the expiry of short sessions of their
// own, the floor proxy's on the signal with which it cuts its streams. The
// cut's row is the median, over the cuts, of the server's processor time
// from the cut until the last stream closed, per stream: for clustergate,
// less what the expiry of a session without streams costs it over as long
// a window, measured between its cuts. The aggregated pair's watches are
// closed by the client.
func idleFloorRows(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, paths []path) ([]floorRow, error) {
	n, k := *floorWatches, max(*floorCuts, 1)
	// Long enough to open them all on a loaded machine; each session with
	// streams expires cutGap after the last, and one without streams
	// halfway between.
	ttl := 2*time.Minute + time.Duration(k*n)*20*time.Millisecond
	shorts, empties := make([]*v1alpha1.Session, k), make([]*v1alpha1.Session, k)
	for i := range k {
		var err error
		at := ttl + time.Duration(i)*cutGap
		if shorts[i], err = openSession(ctx, client, fmt.Sprintf("floor-cut-%d", i), at, dataPlaneOwner); err != nil {
			return nil, err
		}
		if empties[i], err = openSession(ctx, client, fmt.Sprintf("floor-cut-empty-%d", i), at+cutGap/2, dataPlaneOwner); err != nil {
			return nil, err
		}
	}
	clientOf := func(s *v1alpha1.Session) (kubernetes.Interface, error) {
		p, err := clients(ctx, cp, gardenCfg, s, s)
		if err != nil {
			return nil, err
		}
		return p[dataPlane].client, nil
	}
	first, err := clientOf(shorts[0])
	if err != nil {
		return nil, err
	}
	watched := map[int]kubernetes.Interface{whole: paths[whole].client, floorAggregated: paths[floorAggregated].client,
		dataPlane: first, floorProxy: paths[floorProxy].client}
	watchCtx, closeWatches := context.WithCancel(ctx)
	defer closeWatches()
	kib, ended := map[int]float64{}, map[int]<-chan time.Time{}
	for _, pair := range floorPairs {
		for _, p := range []int{pair.clustergate, pair.low} {
			before, err := cp.AnonymousRSSKiB(serverOf(p))
			if err != nil {
				return nil, err
			}
			if ended[p], err = openWatchesConcurrently(watchCtx, watched[p], n); err != nil {
				return nil, fmt.Errorf("watches through %s: %w", paths[p].name, err)
			}
			time.Sleep(5 * time.Second)
			after, err := cp.AnonymousRSSKiB(serverOf(p))
			if err != nil {
				return nil, err
			}
			kib[p] = float64(after-before) / float64(n)
		}
	}
	var rows []floorRow
	for _, pair := range floorPairs {
		rows = append(rows, ratioRow(fmt.Sprintf("%s: server's anonymous RSS per idle watch (%d open)", pair.name, n),
			kib[pair.clustergate], kib[pair.low], func(k float64) string { return fmt.Sprintf("%.1f KiB", k) }, floorTargetStream))
	}

	// The cuts. Each is the server's processor time from the cut until the
	// last of n streams closed (nil ended: until cut returns), and how
	// long that took.
	cutCPU := func(server string, cut func() error, ended <-chan time.Time) (time.Duration, time.Duration, error) {
		before, err := cp.CPUTime(server)
		if err != nil {
			return 0, 0, err
		}
		start := time.Now()
		if err := cut(); err != nil {
			return 0, 0, err
		}
		for range n {
			if ended != nil {
				<-ended
			}
		}
		after, err := cp.CPUTime(server)
		return after - before, time.Since(start), err
	}
	signal := func() error {
		pid, err := cp.PID(floorReverse)
		if err != nil {
			return err
		}
		return syscall.Kill(pid, syscall.SIGUSR1)
	}
	// The floor's cuts, and the watches of clustergate's later sessions.
	floorPerStream := make([]float64, k)
	clustergateEnded := []<-chan time.Time{ended[dataPlane]}
	for i := range k {
		if i > 0 {
			if ended[floorProxy], err = openWatchesConcurrently(watchCtx, watched[floorProxy], n); err != nil {
				return nil, fmt.Errorf("watches through %s: %w", paths[floorProxy].name, err)
			}
		}
		cut, _, err := cutCPU(floorReverse, signal, ended[floorProxy])
		if err != nil {
			return nil, err
		}
		floorPerStream[i] = float64(cut) / float64(n)
		if i > 0 {
			c, err := clientOf(shorts[i])
			if err != nil {
				return nil, err
			}
			e, err := openWatchesConcurrently(watchCtx, c, n)
			if err != nil {
				return nil, fmt.Errorf("watches through %s of session %s: %w", paths[dataPlane].name, shorts[i].Name, err)
			}
			clustergateEnded = append(clustergateEnded, e)
		}
	}
	if time.Now().After(shorts[0].Status.ExpiresAt.Time) {
		return nil, fmt.Errorf("session %s expired before its %d watches were measured: lower -floor-watches or -floor-cuts", shorts[0].Name, n)
	}
	// clustergate's cuts at the expiries. The waits for them are outside
	// the measured windows: what clustergate does meanwhile (its
	// controllers, the watches' keepalives) is not the cut's.
	clustergatePerStream, expiries := make([]float64, k), make([]float64, k)
	var took time.Duration
	for i := range k {
		time.Sleep(time.Until(shorts[i].Status.ExpiresAt.Add(-100 * time.Millisecond)))
		profiled := func() error { return nil }
		if *profileDir != "" && i == 0 {
			// The second from the first cut on: the cut, and what
			// follows the expiry.
			profiled = profileServer(ctx, cp, cp.ClustergateURL, time.Second, filepath.Join(*profileDir, "cut.cpu.pprof"))
		}
		cut, window, err := cutCPU("clustergate", func() error { return nil }, clustergateEnded[i])
		if err != nil {
			return nil, err
		}
		if err := profiled(); err != nil {
			return nil, err
		}
		// The empty session's expiry, over a window as long as the cut's.
		time.Sleep(time.Until(empties[i].Status.ExpiresAt.Add(-100 * time.Millisecond)))
		expiry, _, err := cutCPU("clustergate", func() error { time.Sleep(window); return nil }, nil)
		if err != nil {
			return nil, err
		}
		clustergatePerStream[i], expiries[i] = float64(cut-expiry)/float64(n), float64(expiry)
		took = max(took, window)
	}
	cg, low := medianOf(clustergatePerStream), medianOf(floorPerStream)
	cut := ratioRow(fmt.Sprintf("data plane: server's CPU per idle watch cut (%d at once, median of %d cuts: clustergate at a session's expiry, less an expiry without streams; the floor on a signal)", n, k),
		cg, low, micros, floorTargetCut)
	cut.clustergate, cut.floor = withRange(cut.clustergate, clustergatePerStream), withRange(cut.floor, floorPerStream)
	return append(rows,
		floorRow{name: fmt.Sprintf("data plane: clustergate's CPU for a session's expiry without streams (over a window as long as a cut's, up to %s), median of %d", took.Round(time.Millisecond), k),
			clustergate: withRange(micros(medianOf(expiries)), expiries), floor: "-", ratio: "-", target: "-"},
		cut), nil
}

// medianOf is the median of xs, the upper one of an even count.
func medianOf(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// withRange appends the range of xs, in µs, to the median's cell.
func withRange(cell string, xs []float64) string {
	return fmt.Sprintf("%s (%s–%s)", cell, micros(slices.Min(xs)), micros(slices.Max(xs)))
}
