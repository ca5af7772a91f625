// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
