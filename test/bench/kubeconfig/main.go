// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kubeconfig benchmarks the GardenerClusterKubeconfig controller on
// the local control plane (real gardener-apiserver, garden kube-apiserver and
// etcd): it creates many objects with a short kubeconfig validity, then
// measures the time until all are Ready, the Gardener requests per rotation,
// how late rotations happen against their due time, and the server's memory.
//
// Run with `make bench-kubeconfig` (-objects=10000) or smaller for a quick look:
//
//	go run ./test/bench/kubeconfig -objects=500
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/gardenerclusterkubeconfigs"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

const namespace = "bench"

func main() {
	objects := flag.Int("objects", 10000, "GardenerClusterKubeconfigs to create")
	expiration := flag.Duration("expiration", 10*time.Minute, "--kubeconfig-expiration of the server (Gardener's minimum is 10m)")
	ratio := flag.Float64("ratio", 0.6, "--kubeconfig-rotation-ratio of the server")
	qps := flag.Int("gardener-qps", 5, "--gardener-qps of the server: the pace the local gardener-apiserver keeps (about 5 kubeconfigs per second on 2 cores), which rotations are scheduled at")
	workers := flag.Int("workers", 20, "--kubeconfig-workers of the server")
	verbosity := flag.Int("v", 0, "log verbosity of the server; 4 logs every pass's next action, to trace a late rotation in _output/bench/logs/clustergate.log")
	flag.Parse()
	root, _ := os.Getwd()
	if err := run(root, *objects, *expiration, *ratio, *qps, *workers, *verbosity); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(root string, n int, expiration time.Duration, ratio float64, qps, workers, verbosity int) error {
	ctx := context.Background()
	cp, err := localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(root, "_output", "bench"), BinDir: filepath.Join(root, "_output", "bin"), RepoRoot: root,
		ClustergateArgs: []string{
			"--kubeconfig-expiration=" + expiration.String(),
			fmt.Sprintf("--kubeconfig-rotation-ratio=%v", ratio),
			fmt.Sprintf("--gardener-qps=%d", qps), fmt.Sprintf("--gardener-burst=%d", 2*qps),
			fmt.Sprintf("--kubeconfig-workers=%d", workers), fmt.Sprintf("--v=%d", verbosity),
		},
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	kube := kubernetes.NewForConfigOrDie(cfg)
	client := versioned.NewForConfigOrDie(cfg)
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "create", "namespace", namespace); err != nil {
		return err
	}

	// Every write of every Secret, as it happens.
	rec := newRecorder()
	w, err := kube.CoreV1().Secrets(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: gardenerclusterkubeconfigs.ManagedSecretSelector().String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	go rec.consume(w)

	requestsBefore, err := cp.GardenerKubeconfigRequests(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := createObjects(ctx, client, n); err != nil {
		return err
	}
	created := time.Since(start)
	fmt.Printf("created %d objects in %s\n", n, created.Round(time.Millisecond))
	for rec.count(v1alpha1.KubeconfigReasonCreated) < n {
		time.Sleep(time.Second)
	}
	allReady := waitReady(ctx, client, n)
	readyIn := time.Since(start)
	requestsAfterCreate, err := cp.GardenerKubeconfigRequests(ctx)
	if err != nil {
		return err
	}
	rssAfterCreate := rss(cp)
	fmt.Printf("all %d Ready after %s\n", n, readyIn.Round(time.Second))

	// Every object rotates once within validity×ratio after its write.
	deadline := time.Now().Add(time.Duration(float64(expiration)*ratio) + readyIn + 5*time.Minute)
	for rec.count(v1alpha1.KubeconfigReasonRotated) < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
	}
	rotated, rotations := rec.counts(v1alpha1.KubeconfigReasonRotated)
	_, firsts := rec.counts(v1alpha1.KubeconfigReasonCreated)
	requestsAfterRotation, err := cp.GardenerKubeconfigRequests(ctx)
	if err != nil {
		return err
	}
	late := rec.lateness(gardenerclusterkubeconfigs.Config{RotationRatio: ratio})

	fmt.Printf("\n| metric | value |\n|---|---|\n")
	fmt.Printf("| objects | %d |\n", n)
	fmt.Printf("| kubeconfig validity / rotation ratio | %s / %v |\n", expiration, ratio)
	fmt.Printf("| time to create the objects | %s |\n", created.Round(time.Millisecond))
	fmt.Printf("| time until all Ready | %s (%v) |\n", readyIn.Round(time.Second), allReady)
	// Rotations that start early overlap the first kubeconfigs of the last
	// objects, so requests are counted against every kubeconfig written.
	fmt.Printf("| Gardener requests until all Ready | %d |\n", requestsAfterCreate-requestsBefore)
	fmt.Printf("| objects rotated / rotations (an object rotated early rotates again within the run) | %d of %d / %d |\n", rotated, n, rotations)
	fmt.Printf("| Gardener requests per kubeconfig written (first ones and rotations) | %.3f (%d requests, %d writes) |\n",
		float64(requestsAfterRotation-requestsBefore)/float64(firsts+rotations), requestsAfterRotation-requestsBefore, firsts+rotations)
	if len(late) > 0 {
		fmt.Printf("| rotation lateness p50 / p99 / max | %s / %s / %s |\n",
			percentile(late, 0.5).lateness, percentile(late, 0.99).lateness, late[len(late)-1].lateness)
	}
	fmt.Printf("| clustergate RSS after create / after rotation | %s / %s |\n", rssAfterCreate, rss(cp))
	// The latest rotations, to find them in the server's log (-v=4).
	fmt.Println("\nlatest rotations: object, previous write, its validity, due, seen after due")
	for _, r := range late[max(0, len(late)-5):] {
		fmt.Printf("%s %s %s %s %s\n", r.object, r.lastSync.Format(time.TimeOnly), r.validity, r.due.Format(time.TimeOnly), r.lateness)
	}
	return nil
}

func createObjects(ctx context.Context, client versioned.Interface, n int) error {
	var failed atomic.Value
	names := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range names {
				name := fmt.Sprintf("c-%05d", i)
				if _, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(namespace).Create(ctx, &v1alpha1.GardenerClusterKubeconfig{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: v1alpha1.GardenerClusterKubeconfigSpec{
						Shoot:      v1alpha1.ShootReference{Name: localcluster.Shoot},
						Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: "kubeconfig-" + name}},
					},
				}, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}

func waitReady(ctx context.Context, client versioned.Interface, n int) bool {
	for range 600 {
		list, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(namespace).List(ctx, metav1.ListOptions{FieldSelector: "status.state=Ready"})
		if err == nil && len(list.Items) >= n {
			return true
		}
		time.Sleep(time.Second)
	}
	return false
}

// recorder keeps every write of every Secret: when it was written and until
// when its kubeconfig was valid.
type recorder struct {
	mu     sync.Mutex
	writes map[string][]write
}

type write struct {
	reason              string
	lastSync, expiresAt time.Time
	seen                time.Time
}

func newRecorder() *recorder { return &recorder{writes: map[string][]write{}} }

func (r *recorder) consume(w watch.Interface) {
	for ev := range w.ResultChan() {
		s, ok := ev.Object.(*corev1.Secret)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		lastSync, err1 := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationLastSync])
		expiresAt, err2 := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationExpiresAt])
		if err1 != nil || err2 != nil {
			continue
		}
		r.mu.Lock()
		prev := r.writes[s.Labels[v1alpha1.LabelClusterName]]
		if len(prev) == 0 || !prev[len(prev)-1].lastSync.Equal(lastSync) {
			r.writes[s.Labels[v1alpha1.LabelClusterName]] = append(prev, write{reason: s.Annotations[v1alpha1.AnnotationReason],
				lastSync: lastSync, expiresAt: expiresAt, seen: time.Now()})
		}
		r.mu.Unlock()
	}
}

// count is how many objects have at least one write for reason.
func (r *recorder) count(reason string) int {
	objects, _ := r.counts(reason)
	return objects
}

// counts is how many objects have a write for reason, and how many such
// writes there are: an object rotated early rotates again within the run.
func (r *recorder) counts(reason string) (objects, writes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ws := range r.writes {
		n := 0
		for _, w := range ws {
			if w.reason == reason {
				n++
			}
		}
		writes += n
		if n > 0 {
			objects++
		}
	}
	return objects, writes
}

// rotation is one rotation as the bench saw it.
type rotation struct {
	object             string
	lastSync, due      time.Time
	validity, lateness time.Duration
}

// lateness is, for each rotation, how long after its due time the new
// kubeconfig was seen, latest last.
func (r *recorder) lateness(cfg gardenerclusterkubeconfigs.Config) []rotation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rotation
	for object, ws := range r.writes {
		for i := 1; i < len(ws); i++ {
			if ws[i].reason != v1alpha1.KubeconfigReasonRotated {
				continue
			}
			due := gardenerclusterkubeconfigs.RotationTime(ws[i-1].lastSync, ws[i-1].expiresAt, cfg)
			out = append(out, rotation{object: object, lastSync: ws[i-1].lastSync, due: due,
				validity: ws[i-1].expiresAt.Sub(ws[i-1].lastSync), lateness: ws[i].seen.Sub(due).Round(10 * time.Millisecond)})
		}
	}
	slices.SortFunc(out, func(a, b rotation) int { return int(a.lateness - b.lateness) })
	return out
}

func percentile[T any](sorted []T, p float64) T {
	return sorted[int(float64(len(sorted)-1)*p)]
}

// rss is the resident memory of the clustergate process.
func rss(cp *localcluster.ControlPlane) string {
	kib, err := cp.RSSKiB("clustergate")
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d MiB", kib/1024)
}
