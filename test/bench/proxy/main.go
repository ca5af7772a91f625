// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command proxy benchmarks the ways into a session on the local control
// plane. Every measurement is taken in the same run four ways: through the
// whole aggregated path (client → kube-apiserver → clustergate → target
// kube-apiserver), through clustergate alone (called with the front-proxy
// certificate, as the aggregator calls it), through the data plane (a
// bearer JWT of the garden's service-account issuer, verified by
// clustergate), and directly against the target with the session's own
// minted credentials; the last column is what each way adds to the direct
// one. pkg/proxy's in-process benchmarks
// complete the table with the handler's own cost and upgraded streams.
// A second table sets clustergate's figures beside its floor's, the same
// work through the bare Go proxies of test/bench/floor (floor.go).
//
//	go run ./test/bench/proxy            # or: make bench-proxy
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

const namespace = "bench"

func main() {
	gets := flag.Int("gets", 500, "small GETs per path")
	configMaps := flag.Int("configmaps", 5000, "ConfigMaps to LIST")
	streams := flag.Int("streams", 1000, "idle watches held open through the data planes of two replicas until their session expires (0: skip)")
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
	cfg    *rest.Config
	// profiled is the URL of the generic API server that proxies the
	// path, whose CPU profile -profile takes; empty for the others.
	profiled string
}

// Paths, in the order of the table's columns.
const (
	whole        = iota // client → kube-apiserver → clustergate → target
	alone               // client → clustergate → target, as the aggregator asks
	dataPlane           // client → clustergate's data plane → target, with a JWT
	targetDirect        // client → target, with the session's own credentials
	ways
)

type row struct {
	name  string
	cells [ways]string
	ratio string
}

func run(root string, n, configMaps, streams int) error {
	ctx := context.Background()
	cp, err := localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(root, "_output", "bench-proxy"), BinDir: filepath.Join(root, "_output", "bin"), RepoRoot: root,
		ClustergateArgs: append([]string{"--proxy-max-requests-per-session=0", "--proxy-max-requests-per-owner=0",
			// The floor rows open a session per cut for the owner of the data plane.
			"--session-max-per-owner=0"}, strings.Fields(*argsFlag)...),
		ClustergateEnv: clustergateEnv(),
		// A second replica joins for the fleet rows.
		SharedEtcd: true,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()

	// A cluster-target session of a service account, group admin on the
	// target, assigned by the garden admin.
	if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "create", "clusterrolebinding", "bench-admins", "--clusterrole=cluster-admin", "--group=admin"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"create", "namespace", namespace},
		{"-n", namespace, "create", "serviceaccount", "bench"},
		{"-n", namespace, "create", "rolebinding", "bench-sessions", "--clusterrole=clustergate:session-user", "--serviceaccount=" + namespace + ":bench"},
		{"-n", namespace, "create", "rolebinding", "bench-targets", "--clusterrole=clustergate:target-admin", "--serviceaccount=" + namespace + ":bench"},
		{"-n", namespace, "create", "rolebinding", "bench-data-plane-targets", "--clusterrole=clustergate:target-admin", "--user=" + dataPlaneOwner},
	} {
		if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, args...); err != nil {
			return err
		}
	}
	gardenCfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	// No client-side throttling: latencies are the servers'.
	gardenCfg.QPS, gardenCfg.Burst = 5000, 5000
	client := versioned.NewForConfigOrDie(gardenCfg)
	s, err := openSession(ctx, client, "bench", 10*time.Minute, owner)
	if err != nil {
		return err
	}
	dp, err := openSession(ctx, client, "bench-data-plane", 10*time.Minute, dataPlaneOwner)
	if err != nil {
		return err
	}
	paths, err := clients(ctx, cp, gardenCfg, s, dp)
	if err != nil {
		return err
	}
	if *floors && !*fleetOnly {
		low, err := startFloors(ctx, cp, gardenCfg, s, paths[whole].cfg)
		if err != nil {
			return err
		}
		paths = append(paths, low...)
	}
	direct := paths[targetDirect].client
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	if *fleetOnly {
		rows, err := fleet(ctx, cp, client, gardenCfg, streams)
		return printTable(paths, rows, err)
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
	rows = append(rows, smallGetRows(p50, p99)...)
	// Beside them, with floors, the same figures of clustergate and of its
	// floor.
	var floorRows []floorRow
	withFloors := len(paths) > floorProxy
	if withFloors {
		floorRows = latencyFloorRows(p50, p99)
	}
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
		cells: [ways]string{o50[whole].String() + " / " + o99[whole].String(), o50[alone].String() + " / " + o99[alone].String()}})

	// LIST throughput.
	if err := createConfigMaps(ctx, direct, configMaps); err != nil {
		return err
	}
	rates := listRates(ctx, paths, 20)
	rows = append(rows, row{name: fmt.Sprintf("LIST %d ConfigMaps, items/s", configMaps),
		cells: [ways]string{fmt.Sprintf("%.0f", rates[whole]), fmt.Sprintf("%.0f", rates[alone]), fmt.Sprintf("%.0f", rates[dataPlane]), fmt.Sprintf("%.0f", rates[targetDirect])},
		ratio: fmt.Sprintf("%.0f%% / %.0f%% / %.0f%% of direct (data plane target ≥ 95%%)", 100*rates[whole]/rates[targetDirect], 100*rates[alone]/rates[targetDirect], 100*rates[dataPlane]/rates[targetDirect])})
	if withFloors {
		floorRows = append(floorRows, throughputFloorRows(fmt.Sprintf("LIST %d ConfigMaps, items/s", configMaps), rates, func(r float64) string { return fmt.Sprintf("%.0f", r) })...)
		large, err := largeGetRates(ctx, paths)
		if err != nil {
			return err
		}
		floorRows = append(floorRows, throughputFloorRows("GET of a 1,000,000-byte ConfigMap, MiB/s", large, func(r float64) string { return fmt.Sprintf("%.1f", r) })...)
	}

	// Watch event delivery.
	w50, err := watchLatencies(ctx, paths, 200)
	if err != nil {
		return err
	}
	rows = append(rows, addedRow("watch event latency p50", w50))

	loaded, results, err := loadFlagRows(ctx, cp, paths)
	if err != nil {
		return err
	}
	rows = append(rows, loaded...)
	if withFloors {
		floorRows = append(floorRows, loadFloorRows(results)...)
		execRows, err := execFloorRows(ctx, cp, paths)
		if err != nil {
			return err
		}
		idleRows, err := idleFloorRows(ctx, cp, client, gardenCfg, paths)
		if err != nil {
			return err
		}
		floorRows = append(append(floorRows, execRows...), idleRows...)
	}
	defer printFloorTable(floorRows)
	if *floorOnly {
		return printTable(paths, rows, nil)
	}

	// In process: the handler alone, and upgraded streams (there is no
	// kubelet here to exec into).
	handler, err := inProcess(root)
	if err != nil {
		return err
	}
	rows = append(rows, handler...)

	fleetRows, err := fleet(ctx, cp, client, gardenCfg, streams)
	return printTable(paths, append(rows, fleetRows...), err)
}

// printTable prints the rows measured before err, if any, and returns err.
func printTable(paths []path, rows []row, err error) error {
	fmt.Printf("\n| measurement | %s | %s | %s | %s | whole path / clustergate alone / data plane vs direct |\n|---|---|---|---|---|---|\n",
		paths[whole].name, paths[alone].name, paths[dataPlane].name, paths[targetDirect].name)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.name, r.cells[0], r.cells[1], r.cells[2], r.cells[3], r.ratio)
	}
	return err
}

// addedRow shows durations per path and what each way adds to the direct
// one.
func addedRow(name string, d []time.Duration) row {
	return row{name: name, cells: [ways]string{d[whole].String(), d[alone].String(), d[dataPlane].String(), d[targetDirect].String()},
		ratio: fmt.Sprintf("+%v / +%v / +%v", d[whole]-d[targetDirect], d[alone]-d[targetDirect], d[dataPlane]-d[targetDirect])}
}
