// Command proxy benchmarks sessions/proxy on the local control plane: every
// measurement is taken through the whole aggregated path (client →
// kube-apiserver → clustergate → target kube-apiserver) and, in the same
// run, directly against the target with the same minted credentials, and is
// printed as a ratio.
//
//	go run ./hack/bench/proxy            # or: make bench-proxy
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/test/controlplane"
)

const namespace = "bench"

func main() {
	gets := flag.Int("gets", 500, "small GETs per path")
	configMaps := flag.Int("configmaps", 5000, "ConfigMaps to LIST")
	streams := flag.Int("streams", 1000, "idle watches held open through the proxy")
	flag.Parse()
	root, _ := os.Getwd()
	if err := run(root, *gets, *configMaps, *streams); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct{ name, proxy, direct, ratio string }

func run(root string, gets, configMaps, streams int) error {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: filepath.Join(root, "_output", "bench-proxy"), BinDir: filepath.Join(root, "_output", "bin"), RepoRoot: root,
		ClustergateArgs: []string{"--proxy-max-requests-per-session=0", "--proxy-max-requests-per-owner=0"},
	})
	if err != nil {
		return err
	}
	defer cp.Stop()

	// A cluster-target session of the garden admin, group admin on the target.
	if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "create", "clusterrolebinding", "bench-admins", "--clusterrole=cluster-admin", "--group=admin"); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "create", "namespace", namespace); err != nil {
		return err
	}
	gardenCfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	// No client-side throttling: latencies are the servers'.
	gardenCfg.QPS, gardenCfg.Burst = 5000, 5000
	client := versioned.NewForConfigOrDie(gardenCfg)
	s, err := openSession(ctx, client, "bench", 10*time.Minute)
	if err != nil {
		return err
	}
	direct, viaProxy, err := clients(ctx, cp, gardenCfg, s)
	if err != nil {
		return err
	}
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	var rows []row
	// Small GETs.
	p50p, p99p := latency(ctx, viaProxy, gets)
	p50d, p99d := latency(ctx, direct, gets)
	rows = append(rows,
		row{"small GET p50", p50p.String(), p50d.String(), "added " + (p50p - p50d).String()},
		row{"small GET p99", p99p.String(), p99d.String(), "added " + (p99p - p99d).String()})
	// What the aggregation hop alone costs: a GET of the session itself,
	// served by clustergate through the same kube-apiserver.
	a50, a99 := latencyOf(gets, func() error {
		_, err := client.ClustergateV1alpha1().Sessions(namespace).Get(ctx, s.Name, metav1.GetOptions{})
		return err
	})
	rows = append(rows, row{"GET of the Session through kube-apiserver (aggregation hop alone) p50 / p99", a50.String() + " / " + a99.String(), "", ""})

	// LIST throughput.
	if err := createConfigMaps(ctx, direct, configMaps); err != nil {
		return err
	}
	lp, ld := listRate(ctx, viaProxy), listRate(ctx, direct)
	rows = append(rows, row{fmt.Sprintf("LIST %d ConfigMaps, items/s", configMaps), fmt.Sprintf("%.0f", lp), fmt.Sprintf("%.0f", ld), fmt.Sprintf("%.0f%%", 100*lp/ld)})

	// Watch event delivery.
	wp, err := watchLatency(ctx, viaProxy, direct, 200)
	if err != nil {
		return err
	}
	wd, err := watchLatency(ctx, direct, direct, 200)
	if err != nil {
		return err
	}
	rows = append(rows, row{"watch event latency p50", wp.String(), wd.String(), "added " + (wp - wd).String()})

	// Idle watches: memory, then expiry.
	short, err := openSession(ctx, client, "expiring", 3*time.Minute)
	if err != nil {
		return err
	}
	_, shortProxy, err := clients(ctx, cp, gardenCfg, short)
	if err != nil {
		return err
	}
	before := rssKiB(cp)
	ended, err := openWatches(ctx, shortProxy, streams)
	if err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	after := rssKiB(cp)
	rows = append(rows, row{fmt.Sprintf("clustergate RSS per idle watch (%d open)", streams),
		fmt.Sprintf("%.0f KiB", float64(after-before)/float64(streams)), "", fmt.Sprintf("%d → %d MiB", before/1024, after/1024)})
	var last time.Time
	for range streams {
		last = <-ended
	}
	rows = append(rows, row{fmt.Sprintf("expiresAt → last of %d streams closed", streams), last.Sub(short.Status.ExpiresAt.Time).Round(time.Millisecond).String(), "", ""})

	fmt.Printf("\n| measurement | through the proxy | direct | proxy vs direct |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.name, r.proxy, r.direct, r.ratio)
	}
	return nil
}

func openSession(ctx context.Context, client versioned.Interface, name string, ttl time.Duration) (*v1alpha1.Session, error) {
	_, err := client.ClustergateV1alpha1().Sessions(namespace).Create(ctx, &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL: metav1.Duration{Duration: ttl}, AccessLevel: v1alpha1.AccessLevel{Group: "admin"},
			Target: v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: controlplane.ShootTargetSecret}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	for range 120 {
		s, err := client.ClustergateV1alpha1().Sessions(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
			return s, nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, fmt.Errorf("session %s not Ready", name)
}

// clients returns a client of the target with the session's own minted
// credentials, and one through the session's proxy as its owner.
func clients(ctx context.Context, cp *controlplane.ControlPlane, garden *rest.Config, s *v1alpha1.Session) (kubernetes.Interface, kubernetes.Interface, error) {
	kube := kubernetes.NewForConfigOrDie(garden)
	secret, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	directCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[credentials.KeyKubeconfig])
	if err != nil {
		return nil, nil, err
	}
	proxyCfg := rest.CopyConfig(garden)
	proxyCfg.Host = strings.TrimSuffix(garden.Host, "/") + s.Status.Endpoint
	directCfg.QPS, directCfg.Burst = 5000, 5000
	return kubernetes.NewForConfigOrDie(directCfg), kubernetes.NewForConfigOrDie(proxyCfg), nil
}

func latency(ctx context.Context, c kubernetes.Interface, n int) (time.Duration, time.Duration) {
	return latencyOf(n, func() error {
		_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// latencyOf returns the p50 and p99 of n calls of f, after a warm-up.
func latencyOf(n int, f func() error) (time.Duration, time.Duration) {
	var samples []time.Duration
	for i := range n + 20 {
		start := time.Now()
		if err := f(); err != nil {
			continue
		}
		if i >= 20 {
			samples = append(samples, time.Since(start))
		}
	}
	slices.Sort(samples)
	return samples[len(samples)/2].Round(time.Microsecond), samples[len(samples)*99/100].Round(time.Microsecond)
}

func createConfigMaps(ctx context.Context, c kubernetes.Interface, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	names := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range names {
				_, err := c.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"k": strings.Repeat("v", 100)},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	return <-errs
}

func listRate(ctx context.Context, c kubernetes.Interface) float64 {
	items, start := 0, time.Now()
	for range 10 {
		l, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			items += len(l.Items)
		}
	}
	return float64(items) / time.Since(start).Seconds()
}

// watchLatency is the median time from a ConfigMap's creation (written
// directly) to its ADDED event on a watch opened with c.
func watchLatency(ctx context.Context, c, writer kubernetes.Interface, n int) (time.Duration, error) {
	ns := "watch-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := writer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	w, err := c.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	var samples []time.Duration
	for i := range n {
		start := time.Now()
		if _, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w-" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added && ev.Object.(*corev1.ConfigMap).Name == "w-"+strconv.Itoa(i) {
				samples = append(samples, time.Since(start))
				break
			}
		}
	}
	slices.Sort(samples)
	return samples[len(samples)/2].Round(time.Microsecond), nil
}

// openWatches opens n watches through c; each sends the moment it ended.
func openWatches(ctx context.Context, c kubernetes.Interface, n int) (<-chan time.Time, error) {
	ended := make(chan time.Time, n)
	for range n {
		w, err := c.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=none"})
		if err != nil {
			return nil, err
		}
		go func() {
			for range w.ResultChan() {
			}
			ended <- time.Now()
		}()
	}
	return ended, nil
}

func rssKiB(cp *controlplane.ControlPlane) int {
	kib, err := cp.RSSKiB("clustergate")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	return kib
}
