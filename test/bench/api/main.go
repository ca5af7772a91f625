// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command api measures clustergate's API at scale on the local control plane
// against the same objects served as a CustomResourceDefinition by the same
// kube-apiserver, taking turns in one run: LIST as JSON, as a Table and for a
// client that prefers protobuf, create throughput with kubectl and the
// processor time per created object (also with the CRD objects' status
// written as the controller writes the Sessions'), and the
// server's memory with N Sessions and N GardenerClusterKubeconfigs (their
// Secrets cached) before and after the LISTs, settled, after a trickle of
// writes, and its median and range over a window after that.
//
//	go run ./test/bench/api -objects=10000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/memlimit"
)

const namespace = "bench-api"

// createBatches is how many turns the creates of the CRD objects and the
// Sessions take.
const createBatches = 10

// Accept headers as the clients send them.
var encodings = []struct{ name, accept string }{
	{"JSON, as kubectl -o json asks", "application/json"},
	{"Table, as kubectl get asks", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"},
	{"for a client that prefers protobuf", "application/vnd.kubernetes.protobuf,application/json"},
}

func main() {
	objects := flag.Int("objects", 10000, "Sessions, GardenerClusterKubeconfigs and CRD objects to create, each")
	rounds := flag.Int("rounds", 7, "LIST rounds; each LISTs every encoding from both servers, taking turns")
	args := flag.String("clustergate-args", "", "further flags of clustergate-apiserver, separated by spaces, to measure a setting")
	limit := flag.String("container-memory-limit", "", "run clustergate as in a container with this memory limit (e.g. 256Mi): with the Go soft limit it derives from it")
	env := flag.String("clustergate-env", "", "environment variables of clustergate-apiserver, separated by spaces, to measure a setting of the Go runtime (e.g. GOGC=50)")
	settle := flag.Duration("settle", 330*time.Second, "how long after the LISTs to measure memory again, idle: the Go runtime collects at least every 2 minutes, and the memory of the LISTs was returned only after the second of those (3.5 minutes after them, measured)")
	steady := flag.Duration("steady", 5*time.Minute, "after the writes, how long to sample the memory every 30 s for its median and range (0: not)")
	writes := flag.Int("writes", 10, "after the settling, writes to one Session and one GardenerClusterKubeconfig, one of each every 15 s, as a control plane's expiries, rotations and users make them; the live heap and the memory are measured before and after (0: none)")
	flag.Parse()
	root, _ := os.Getwd()
	var memoryLimit int64
	if *limit != "" {
		q, err := resource.ParseQuantity(*limit)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -container-memory-limit:", err)
			os.Exit(2)
		}
		memoryLimit = q.Value()
	}
	if err := run(root, *objects, *rounds, strings.Fields(*args), strings.Fields(*env), memoryLimit, *settle, *writes, *steady); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(root string, n, rounds int, args, env []string, memoryLimit int64, settle time.Duration, writes int, steady time.Duration) error {
	ctx := context.Background()
	dir := filepath.Join(root, "_output", "bench-api")
	cp, err := localcluster.Start(ctx, localcluster.Options{
		Dir: dir, BinDir: filepath.Join(root, "_output", "bin"), RepoRoot: root,
		// Both servers store in the same etcd, so that the comparison is
		// of the servers, not of two etcds (the embedded one syncs every
		// write to disk, the local garden's does not).
		SharedEtcd: true,
		// One owner creates every session.
		ClustergateArgs:        append([]string{"--session-max-per-owner=0"}, args...),
		ClustergateMemoryLimit: memoryLimit,
		ClustergateEnv:         env,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	kubectl := func(stdin []byte, args ...string) error {
		out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, stdin, args...)
		if err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := kubectl(nil, "create", "namespace", namespace); err != nil {
		return err
	}
	if err := kubectl([]byte(crd), "apply", "-f", "-"); err != nil {
		return err
	}
	if err := kubectl(nil, "wait", "--for=condition=Established", "crd/benchsessions.bench.clustergate.dev"); err != nil {
		return err
	}
	mem := newMemory(cp)
	mem.sample("idle")
	cpu := newCPUUse(cp)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	crdStatus, err := newCRDStatusWriter(cfg)
	if err != nil {
		return err
	}

	// Creates with kubectl, one object after the other as kubectl sends
	// them, in batches taking turns, so that the load of a shared machine,
	// which comes and goes, weighs on both alike.
	profiled := make(chan error, 1)
	var crdTime, sessionTime time.Duration
	for b := range createBatches {
		from, to := b*n/createBatches, (b+1)*n/createBatches
		before := cpu.now()
		took, err := timedCreate(ctx, cp, dir, "crd", from, to, crdObject)
		if err != nil {
			return err
		}
		crdTime += took
		cpu.add("CRD objects", before)
		if b == 0 {
			// Where the Session creates' CPU goes: the first 30 s from
			// their first batch on.
			go func() { profiled <- mem.cpuProfile(ctx, 30, filepath.Join(dir, "cpu-create.pprof")) }()
		}
		before = cpu.now()
		if took, err = timedCreate(ctx, cp, dir, "sessions", from, to, sessionObject); err != nil {
			return err
		}
		sessionTime += took
		cpu.add("Sessions", before)
		// A Session costs its create and the controller's status write:
		// the CRD objects get the same status by a second write, apart.
		written, err := crdStatus.prepare(ctx, from, to)
		if err != nil {
			return err
		}
		before = cpu.now()
		if err := crdStatus.write(ctx, written); err != nil {
			return fmt.Errorf("status writes of CRD objects: %w", err)
		}
		cpu.add("CRD status writes", before)
	}
	if err := <-profiled; err != nil {
		fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
	}
	fmt.Printf("created %d Sessions in %s, %d CRD objects in %s\n", n, sessionTime.Round(time.Millisecond), n, crdTime.Round(time.Millisecond))
	if err := createKubeconfigs(ctx, cfg, cp.AdminKubeconfig, n); err != nil {
		return err
	}
	if err := waitSettled(ctx, cfg, n); err != nil {
		return err
	}
	mem.sample("after the creates")

	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	paths := map[string]string{
		"clustergate": cfg.Host + "/apis/clustergate.dev/v1alpha1/namespaces/" + namespace + "/sessions",
		"crd":         cfg.Host + "/apis/bench.clustergate.dev/v1/namespaces/" + namespace + "/benchsessions",
	}
	times := map[string][]time.Duration{}
	for range rounds {
		for _, e := range encodings {
			for _, server := range []string{"clustergate", "crd"} {
				took, err := list(ctx, client, paths[server], e.accept, n)
				if err != nil {
					return fmt.Errorf("LIST %s %s: %w", server, e.name, err)
				}
				times[server+e.name] = append(times[server+e.name], took)
			}
		}
	}
	mem.sample(fmt.Sprintf("after %d LISTs", rounds*len(encodings)))
	// The bound right after the LISTs is looser than the steady
	// one: their garbage is still on the heap.
	afterLists := len(mem.samples) - 1
	idleFrom, idleStart := cpu.now(), time.Now()
	if settle > 0 {
		mem.settle(settle, 30*time.Second, fmt.Sprintf("%s after the LISTs, idle", settle))
	}
	idleTo, idleTime := cpu.now(), time.Since(idleStart)
	// After the settling, the profile shows what the server keeps rather
	// than the garbage of the last LIST.
	if err := mem.heapProfile(ctx, filepath.Join(dir, "heap.pprof")); err != nil {
		return err
	}
	liveIdle := mem.read("idle, right after a collection")
	var liveWritten memorySample
	if writes > 0 {
		// The watch cache's event history keeps the last burst's events,
		// with the previous version of every object they changed. It halves
		// at a write only when it is full and its newest quarter is older
		// than 75 s: a trickle of writes sheds a full history within a few
		// writes, and one the burst did not fill not at all.
		if err := writeTrickle(ctx, cfg, writes, 15*time.Second); err != nil {
			return err
		}
		if err := mem.heapProfile(ctx, filepath.Join(dir, "heap-after-writes.pprof")); err != nil {
			return err
		}
		liveWritten = mem.read(fmt.Sprintf("after %d writes of each kind, right after a collection", writes))
	}
	var steadyState steadyState
	if steady > 0 {
		steadyState = mem.window(steady, 30*time.Second)
	}

	limitNote := "no container memory limit"
	if memoryLimit > 0 {
		limitNote = fmt.Sprintf("as in a container with a %d MiB memory limit, GOMEMLIMIT %d MiB", memoryLimit>>20, memlimit.Limit(memoryLimit, memlimit.Ratio)>>20)
	}
	if len(env) > 0 {
		limitNote += ", " + strings.Join(env, " ")
	}
	fmt.Printf("\n| measurement (%d objects; clustergate %s) | clustergate (aggregated) | CRD in kube-apiserver | ratio | target |\n|---|---|---|---|---|\n", n, limitNote)
	crdJSON := median(times["crd"+encodings[0].name])
	for i, e := range encodings {
		c, d := median(times["clustergate"+e.name]), median(times["crd"+e.name])
		target := "≤ 1.0× the CRD"
		ratio := float64(c) / float64(d)
		if i == 2 {
			// A protobuf client of a CRD gets JSON: the comparison is the
			// CRD's JSON LIST.
			target, ratio = "≤ 0.5× the CRD's JSON LIST", float64(c)/float64(crdJSON)
		}
		fmt.Printf("| LIST %s, median of %d | %s | %s | %.2f× | %s |\n", e.name, rounds, c.Round(time.Millisecond), d.Round(time.Millisecond), ratio, target)
	}
	fmt.Printf("| create with kubectl create -f | %s (%.0f/s) | %s (%.0f/s) | %.2f× the CRD's rate | ≥ 1.0× |\n",
		sessionTime.Round(time.Millisecond), float64(n)/sessionTime.Seconds(), crdTime.Round(time.Millisecond), float64(n)/crdTime.Seconds(),
		crdTime.Seconds()/sessionTime.Seconds())
	sessionCPU, crdCPU := cpu.perObject("Sessions", "clustergate", n), cpu.perObject("CRD objects", "garden-apiserver", n)
	fmt.Printf("| processor time per created object: clustergate per Session, kube-apiserver per CRD object | %.2f ms | %.2f ms | %.2f× | ≤ 1.5× |\n",
		sessionCPU, crdCPU, sessionCPU/crdCPU)
	withStatus := crdCPU + cpu.perObject("CRD status writes", "garden-apiserver", n)
	fmt.Printf("| the same with the status written, like for like: clustergate per Session (its create and the controller's status write), kube-apiserver per CRD object and an update of its status to the Session's | %.2f ms | %.2f ms | %.2f× | |\n",
		sessionCPU, withStatus, sessionCPU/withStatus)
	for i, s := range mem.samples {
		target := ""
		if i == afterLists {
			target = "RSS ≤ 300 MiB"
		}
		fmt.Printf("| clustergate %s: RSS (anonymous) / Go heap in use | %d MiB (%d MiB) / %d MiB | | | %s |\n", s.when, s.rssKiB/1024, s.anonKiB/1024, s.heapInUse>>20, target)
	}
	fmt.Printf("| clustergate live: Go heap in use right after a collection, idle since the LISTs | %d MiB | | | |\n", liveIdle.heapInUse>>20)
	if writes > 0 {
		fmt.Printf("| clustergate live: the same after %d writes of each kind, one every 15 s | %d MiB | | | |\n", writes, liveWritten.heapInUse>>20)
	}
	if steady > 0 {
		fmt.Printf("| clustergate steady state, %s sampled every 30 s: RSS median (range) / anonymous median (range) | %d MiB (%d–%d) / %d MiB (%d–%d) | | | RSS ≤ 250 MiB |\n",
			steadyState.duration, steadyState.rss[1]/1024, steadyState.rss[0]/1024, steadyState.rss[2]/1024,
			steadyState.anon[1]/1024, steadyState.anon[0]/1024, steadyState.anon[2]/1024)
	}
	last := mem.samples[len(mem.samples)-1]
	fmt.Printf("| RSS per object (%d Sessions + %d kubeconfigs with Secrets) | %d bytes | | | |\n", n, n,
		(last.rssKiB-mem.samples[0].rssKiB)*1024/(2*n))
	cpu.print(n)
	if settle > 0 {
		cpu.printIdle(idleFrom, idleTo, idleTime)
	}
	fmt.Printf("\nheap profile: go tool pprof -sample_index=inuse_space %s (after the settling), %s (after the writes)\n",
		filepath.Join(dir, "heap.pprof"), filepath.Join(dir, "heap-after-writes.pprof"))
	fmt.Printf("CPU profile of 30 s from the first Session batch on: go tool pprof %s\n", filepath.Join(dir, "cpu-create.pprof"))
	return nil
}

// list LISTs path with accept and returns how long reading the whole answer
// took; the answer must name n objects' worth of bytes to count.
func list(ctx context.Context, client *http.Client, path, accept string, n int) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", accept)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	size, err := io.Copy(io.Discard, resp.Body)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || size < int64(n)*100 {
		return 0, fmt.Errorf("%s, %d bytes", resp.Status, size)
	}
	return took, nil
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
