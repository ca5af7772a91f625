// Command proxy benchmarks sessions/proxy on the local control plane. Every
// measurement is taken in the same run three ways: through the whole
// aggregated path (client → kube-apiserver → clustergate → target
// kube-apiserver), through clustergate alone (called with the front-proxy
// certificate, as the aggregator calls it), and directly against the target
// with the session's own minted credentials; the last column is what
// clustergate and the whole path add. pkg/proxy's in-process benchmarks
// complete the table with the handler's own cost and upgraded streams.
//
//	go run ./hack/bench/proxy            # or: make bench-proxy
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
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

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

const namespace = "bench"

func main() {
	gets := flag.Int("gets", 500, "small GETs per path")
	configMaps := flag.Int("configmaps", 5000, "ConfigMaps to LIST")
	streams := flag.Int("streams", 1000, "idle watches held open through the proxy until their session expires (0: skip)")
	flag.Parse()
	root, _ := os.Getwd()
	if err := run(root, *gets, *configMaps, *streams); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// path is one way of reaching the target.
type path struct {
	name   string
	client kubernetes.Interface
}

// Paths, in the order of the table's columns.
const (
	whole        = iota // client → kube-apiserver → clustergate → target
	alone               // client → clustergate → target, as the aggregator asks
	targetDirect        // client → target, with the session's own credentials
)

type row struct {
	name  string
	cells [3]string
	ratio string
}

func run(root string, n, configMaps, streams int) error {
	ctx := context.Background()
	cp, err := localcluster.Start(ctx, localcluster.Options{
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
	paths, err := clients(ctx, cp, gardenCfg, s)
	if err != nil {
		return err
	}
	direct := paths[targetDirect].client
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	var rows []row
	// Small GETs, the paths taking turns so that noise hits all alike.
	var gets []func() error
	for _, p := range paths {
		gets = append(gets, func() error {
			_, err := p.client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			return err
		})
	}
	p50, p99 := latencies(n, gets)
	rows = append(rows, addedRow("small GET p50", p50), addedRow("small GET p99", p99))
	// What any request to clustergate costs, proxied or not: a GET of the
	// session object itself, served from clustergate's own storage, through
	// kube-apiserver and straight to clustergate.
	toClustergateCfg := cp.FrontProxyConfig(cp.ClustergateURL, "admin", "system:masters", "system:authenticated")
	toClustergateCfg.QPS, toClustergateCfg.Burst = 5000, 5000
	toClustergate := versioned.NewForConfigOrDie(toClustergateCfg)
	var own []func() error
	for _, c := range []versioned.Interface{client, toClustergate} {
		own = append(own, func() error {
			_, err := c.ClustergateV1alpha1().Sessions(namespace).Get(ctx, s.Name, metav1.GetOptions{})
			return err
		})
	}
	o50, o99 := latencies(n, own)
	rows = append(rows, row{name: "GET of the Session object itself (no proxying) p50 / p99",
		cells: [3]string{o50[whole].String() + " / " + o99[whole].String(), o50[alone].String() + " / " + o99[alone].String()}})

	// LIST throughput.
	if err := createConfigMaps(ctx, direct, configMaps); err != nil {
		return err
	}
	rates := listRates(ctx, paths, 20)
	rows = append(rows, row{name: fmt.Sprintf("LIST %d ConfigMaps, items/s", configMaps),
		cells: [3]string{fmt.Sprintf("%.0f", rates[whole]), fmt.Sprintf("%.0f", rates[alone]), fmt.Sprintf("%.0f", rates[targetDirect])},
		ratio: fmt.Sprintf("%.0f%% / %.0f%% of direct", 100*rates[alone]/rates[targetDirect], 100*rates[whole]/rates[targetDirect])})

	// Watch event delivery.
	w50, err := watchLatencies(ctx, paths, 200)
	if err != nil {
		return err
	}
	rows = append(rows, addedRow("watch event latency p50", w50))

	// In process: the handler alone, and upgraded streams (there is no
	// kubelet here to exec into).
	handler, err := inProcess(root)
	if err != nil {
		return err
	}
	rows = append(rows, handler...)

	if streams > 0 {
		idle, err := idleStreams(ctx, cp, client, gardenCfg, streams)
		if err != nil {
			return err
		}
		rows = append(rows, idle...)
	}

	fmt.Printf("\n| measurement | %s | %s | %s | clustergate / whole path vs direct |\n|---|---|---|---|---|\n",
		paths[whole].name, paths[alone].name, paths[targetDirect].name)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.name, r.cells[0], r.cells[1], r.cells[2], r.ratio)
	}
	return nil
}

// addedRow shows durations per path and what clustergate alone and the
// whole path add to the direct one.
func addedRow(name string, d []time.Duration) row {
	return row{name: name, cells: [3]string{d[whole].String(), d[alone].String(), d[targetDirect].String()},
		ratio: fmt.Sprintf("+%v / +%v", d[alone]-d[targetDirect], d[whole]-d[targetDirect])}
}

// idleStreams holds streams idle watches open through the whole path of a
// short session, measures clustergate's memory for them, and waits for the
// session's expiry to end them all.
func idleStreams(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, streams int) ([]row, error) {
	short, err := openSession(ctx, client, "expiring", 3*time.Minute)
	if err != nil {
		return nil, err
	}
	paths, err := clients(ctx, cp, gardenCfg, short)
	if err != nil {
		return nil, err
	}
	before := rssKiB(cp)
	ended, err := openWatches(ctx, paths[whole].client, streams)
	if err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)
	after := rssKiB(cp)
	var last time.Time
	for range streams {
		last = <-ended
	}
	return []row{
		{name: fmt.Sprintf("clustergate RSS per idle watch (%d open)", streams),
			cells: [3]string{fmt.Sprintf("%.0f KiB (%d → %d MiB)", float64(after-before)/float64(streams), before/1024, after/1024)}},
		{name: fmt.Sprintf("expiresAt → last of %d streams closed", streams),
			cells: [3]string{last.Sub(short.Status.ExpiresAt.Time).Round(time.Millisecond).String()}},
	}, nil
}

func openSession(ctx context.Context, client versioned.Interface, name string, ttl time.Duration) (*v1alpha1.Session, error) {
	_, err := client.ClustergateV1alpha1().Sessions(namespace).Create(ctx, &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL: metav1.Duration{Duration: ttl}, AccessLevel: v1alpha1.AccessLevel{Group: "admin"},
			Target: v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: localcluster.ShootTargetSecret}}},
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

// clients returns clients of the session's target through the whole path
// and through clustergate alone, as its owner, and directly with the
// session's own minted credentials.
func clients(ctx context.Context, cp *localcluster.ControlPlane, garden *rest.Config, s *v1alpha1.Session) ([]path, error) {
	kube := kubernetes.NewForConfigOrDie(garden)
	secret, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	directCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[credentials.KeyKubeconfig])
	if err != nil {
		return nil, err
	}
	wholeCfg := rest.CopyConfig(garden)
	wholeCfg.Host = strings.TrimSuffix(garden.Host, "/") + s.Status.Endpoint
	aloneCfg := cp.FrontProxyConfig(cp.ClustergateURL+s.Status.Endpoint, "admin", "system:masters", "system:authenticated")
	paths := []path{{"kube-apiserver → clustergate", nil}, {"clustergate alone", nil}, {"direct", nil}}
	for i, cfg := range []*rest.Config{wholeCfg, aloneCfg, directCfg} {
		cfg.QPS, cfg.Burst = 5000, 5000
		if paths[i].client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// latencies returns the p50 and p99 of n runs of each call, after a
// warm-up; the calls take turns.
func latencies(n int, calls []func() error) (p50, p99 []time.Duration) {
	samples := make([][]time.Duration, len(calls))
	for i := range n + 20 {
		for j := range calls {
			c := (i + j) % len(calls)
			start := time.Now()
			if err := calls[c](); err != nil {
				continue
			}
			if i >= 20 {
				samples[c] = append(samples[c], time.Since(start))
			}
		}
	}
	for _, s := range samples {
		slices.Sort(s)
		p50 = append(p50, s[len(s)/2].Round(time.Microsecond))
		p99 = append(p99, s[len(s)*99/100].Round(time.Microsecond))
	}
	return p50, p99
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

// listRates returns the items per second of rounds LISTs on each path,
// after a warm-up; the paths take turns.
func listRates(ctx context.Context, paths []path, rounds int) []float64 {
	items, spent := make([]int, len(paths)), make([]time.Duration, len(paths))
	for i := range rounds + 1 {
		for j := range paths {
			p := (i + j) % len(paths)
			start := time.Now()
			l, err := paths[p].client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
			if err == nil && i > 0 {
				items[p] += len(l.Items)
				spent[p] += time.Since(start)
			}
		}
	}
	rates := make([]float64, len(paths))
	for p := range paths {
		rates[p] = float64(items[p]) / spent[p].Seconds()
	}
	return rates
}

// watchLatencies is the median time, per path, from a ConfigMap's creation
// (written directly) to its ADDED event on a watch opened through the path;
// the watches of all paths are open at once.
func watchLatencies(ctx context.Context, paths []path, n int) ([]time.Duration, error) {
	writer := paths[targetDirect].client
	ns := "watch-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := writer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var watches []watch.Interface
	for _, p := range paths {
		w, err := p.client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	samples := make([][]time.Duration, len(paths))
	for i := range n {
		name := "w-" + strconv.Itoa(i)
		start := time.Now()
		if _, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		for p, w := range watches {
			wg.Go(func() {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Added && ev.Object.(*corev1.ConfigMap).Name == name {
						samples[p] = append(samples[p], time.Since(start))
						return
					}
				}
			})
		}
		wg.Wait()
	}
	var p50 []time.Duration
	for p, s := range samples {
		if len(s) < n {
			return nil, fmt.Errorf("the watch through %s ended early", paths[p].name)
		}
		slices.Sort(s)
		p50 = append(p50, s[len(s)/2].Round(time.Microsecond))
	}
	return p50, nil
}

// inProcess runs pkg/proxy's benchmarks, where client, proxy handler and
// backend share one process and TLS is on every hop: BenchmarkResponse
// gives the handler's own added latency, without the generic API server
// chain around it, and BenchmarkUpgradedStream the throughput of upgraded
// streams, with the CPU the proxy run spends beyond the direct one turned
// into the proxy's MiB/s per core.
func inProcess(root string) ([]row, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "BenchmarkResponse|BenchmarkUpgradedStream", "-count", "5", "./pkg/proxy/")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	// BenchmarkUpgradedStream/proxy-2  3000  689264 ns/op  380.32 MB/s  4.837 cpu-ns/B
	// Each result is a list of (value, unit) pairs after the iterations.
	results := map[string]map[string][]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0][:strings.LastIndex(f[0], "-")]
		if results[name] == nil {
			results[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("unreadable benchmark line %q", line)
			}
			results[name][f[i+1]] = append(results[name][f[i+1]], v)
		}
	}
	median := func(name, unit string) (float64, error) {
		v := results[name][unit]
		if len(v) == 0 {
			return 0, fmt.Errorf("no %s of %s in: %s", unit, name, out)
		}
		slices.Sort(v)
		return v[len(v)/2], nil
	}
	var values []float64
	for _, m := range []struct{ name, unit string }{
		{"BenchmarkResponse/small/proxy", "ns/op"}, {"BenchmarkResponse/small/direct", "ns/op"},
		{"BenchmarkResponse/1MiB/proxy", "MB/s"}, {"BenchmarkResponse/1MiB/direct", "MB/s"},
		{"BenchmarkUpgradedStream/proxy", "MB/s"}, {"BenchmarkUpgradedStream/direct", "MB/s"},
		{"BenchmarkUpgradedStream/proxy", "cpu-ns/B"}, {"BenchmarkUpgradedStream/direct", "cpu-ns/B"},
	} {
		v, err := median(m.name, m.unit)
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	const mib = 1 << 20
	small := func(ns float64) string { return time.Duration(ns).Round(time.Microsecond).String() }
	perCore := 1e9 / (values[6] - values[7]) / mib
	return []row{
		{name: "in process: small GET through the proxy handler alone (HTTP/2 and TLS on both sides)",
			cells: [3]string{"", small(values[0]), small(values[1])}, ratio: fmt.Sprintf("+%s", small(values[0]-values[1]))},
		{name: "in process: 1 MiB response, MiB/s",
			cells: [3]string{"", fmt.Sprintf("%.0f", values[2]*1e6/mib), fmt.Sprintf("%.0f", values[3]*1e6/mib)}, ratio: fmt.Sprintf("%.0f%% of direct", 100*values[2]/values[3])},
		{name: "in process: upgraded stream (echo: each byte crosses the proxy twice), MiB/s",
			cells: [3]string{"", fmt.Sprintf("%.0f", values[4]*1e6/mib), fmt.Sprintf("%.0f", values[5]*1e6/mib)},
			ratio: fmt.Sprintf("proxy's own: %.0f MiB/s per core", perCore)},
	}, nil
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

func rssKiB(cp *localcluster.ControlPlane) int {
	kib, err := cp.RSSKiB("clustergate")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	return kib
}
