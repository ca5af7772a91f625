// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/pkg/memlimit"
)

// start starts the component name from the binary bin of Options.BinDir.
func (cp *ControlPlane) start(name, bin string, args ...string) error {
	var env []string
	if bin == "clustergate-apiserver" {
		env = append(env, cp.opts.ClustergateEnv...)
		if cp.opts.ClustergateMemoryLimit > 0 {
			// What memlimit derives from a container's limit; here no
			// cgroup enforces it.
			env = append(env, fmt.Sprintf("GOMEMLIMIT=%d", memlimit.Limit(cp.opts.ClustergateMemoryLimit, memlimit.Ratio)))
		}
	}
	return cp.launch(name, filepath.Join(cp.opts.BinDir, bin), env, args...)
}

// launch starts the program at path as the component name. A stopped
// component of that name is replaced, so that StopComponent and restart
// reach the one started last, not one that a previous test stopped; a
// running one is an error.
func (cp *ControlPlane) launch(name, path string, env []string, args ...string) error {
	i, err := cp.process(name)
	if err == nil {
		if done, _ := cp.procs[i].exited(); !done {
			return fmt.Errorf("%s is running", name)
		}
	}
	p, startErr := startProcess(cp.logs, name, path, env, args...)
	if startErr != nil {
		return startErr
	}
	if err == nil {
		cp.procs[i] = p
	} else {
		cp.procs = append(cp.procs, p)
	}
	return nil
}

// process finds the component name among the started ones.
func (cp *ControlPlane) process(name string) (int, error) {
	for i, p := range cp.procs {
		if p.name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no component %q", name)
}

// StopComponent stops one component, such as "gardener-apiserver" or
// "clustergate", to test how the others cope.
func (cp *ControlPlane) StopComponent(name string) error {
	i, err := cp.process(name)
	if err != nil {
		return err
	}
	cp.unbalance(name)
	cp.procs[i].stop(15 * time.Second)
	return nil
}

// ServerNamespace is the namespace clustergate's replicas run in: its
// Service, its Secrets and its leader election Lease.
const ServerNamespace = "clustergate-system"

// KillComponent kills one component with SIGKILL, to test what survives a
// crash: unlike StopComponent, nothing of its shutdown runs, so a leader
// keeps its Lease until the Lease expires.
func (cp *ControlPlane) KillComponent(name string) error {
	i, err := cp.process(name)
	if err != nil {
		return err
	}
	cp.unbalance(name)
	cp.procs[i].kill()
	return nil
}

// unbalance takes the replica name, if it is one, from behind the
// APIService's Service before it stops.
func (cp *ControlPlane) unbalance(name string) {
	if backend, ok := cp.balanced[name]; ok {
		cp.balancer.remove(backend)
	}
}

// StartComponent starts a stopped component again with the same flags and
// waits until its APIServices are Available.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
	if err := cp.restart(name); err != nil {
		return err
	}
	names, url, service := []string{"v1alpha1.clustergate.dev"}, cp.ClustergateURL, ServerNamespace+"/clustergate"
	if name == "gardener-apiserver" {
		names, url, service = nil, fmt.Sprintf("https://127.0.0.1:%d", cp.ports.gardener), "kube-system/gardener-apiserver"
		for _, gv := range gardenerGroupVersions {
			names = append(names, gv.Version+"."+gv.Group)
		}
	}
	// The aggregator rechecks an unavailable APIService after a backoff of
	// up to 30 s, or when its Service changes, as a restarted pod's
	// endpoints would: once the server is ready, touch the Service.
	if err := cp.waitHTTP(ctx, url+"/readyz", cp.certs.aggregatedCA.Pool()); err != nil {
		return err
	}
	if backend, ok := cp.balanced[name]; ok {
		cp.balancer.add(backend)
	}
	ns, svc, _ := strings.Cut(service, "/")
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "annotate", "service", svc, "--overwrite",
		"clustergate.dev/restarted="+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	for _, n := range names {
		if err := cp.waitAPIService(ctx, cp.AdminKubeconfig, n); err != nil {
			return err
		}
	}
	return nil
}

// restart starts a stopped component again with the same flags and
// environment.
func (cp *ControlPlane) restart(name string) error {
	i, err := cp.process(name)
	if err != nil {
		return err
	}
	old := cp.procs[i]
	if done, _ := old.exited(); !done {
		return fmt.Errorf("%s is running", name)
	}
	if cp.procs[i], err = startProcess(cp.logs, name, old.cmd.Path, old.env, old.cmd.Args[1:]...); err != nil {
		cp.procs[i] = old
		return err
	}
	return nil
}

// checkAlive fails when a started process has exited without being stopped.
func (cp *ControlPlane) checkAlive() error {
	for _, p := range cp.procs {
		if done, err := p.exited(); done && !p.stopped {
			return fmt.Errorf("%s exited: %w; see %s", p.name, err, filepath.Join(cp.logs, p.name+".log"))
		}
	}
	return nil
}

// PID is the process ID of a running component, such as "clustergate".
func (cp *ControlPlane) PID(name string) (int, error) {
	i, err := cp.process(name)
	if err != nil {
		return 0, err
	}
	return cp.procs[i].cmd.Process.Pid, nil
}

// RSSKiB is the resident memory of a running component, in KiB.
func (cp *ControlPlane) RSSKiB(name string) (int, error) {
	return cp.statusKiB(name, "VmRSS:")
}

// AnonymousRSSKiB is the part of a running component's resident memory that
// is not a file's pages (its binary's code and data): what it allocated.
func (cp *ControlPlane) AnonymousRSSKiB(name string) (int, error) {
	return cp.statusKiB(name, "RssAnon:")
}

// procFile reads a file of a running component's /proc directory.
func (cp *ControlPlane) procFile(name, file string) (string, error) {
	pid, err := cp.PID(name)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	return string(data), err
}

// statusKiB reads a field in KiB of a running component's /proc status.
func (cp *ControlPlane) statusKiB(name, field string) (int, error) {
	status, err := cp.procFile(name, "status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(status, "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == field {
			return strconv.Atoi(fields[1])
		}
	}
	return 0, fmt.Errorf("no %s in the status of %s", field, name)
}

// Components names the running components, in the order they started.
func (cp *ControlPlane) Components() []string {
	var names []string
	for _, p := range cp.procs {
		if done, _ := p.exited(); !done {
			names = append(names, p.name)
		}
	}
	return names
}

// CPUTime is the processor time, user and system, a running component has
// used since it started: the sum over its threads of the nanoseconds the
// scheduler ran each (/proc/<pid>/task/*/schedstat). /proc/<pid>/stat counts
// in ticks of 10 ms, too coarse for the cost of a few hundred cut streams;
// a thread that exited takes its time with it, which Go's runtime, keeping
// its threads, seldom does.
func (cp *ControlPlane) CPUTime(name string) (time.Duration, error) {
	pid, err := cp.PID(name)
	if err != nil {
		return 0, err
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread exited since the listing
		}
		if err != nil {
			return 0, err
		}
		t, err := runTimeOf(string(data))
		if err != nil {
			return 0, fmt.Errorf("%s: thread %s: schedstat: %w", name, task.Name(), err)
		}
		total += t
	}
	return total, nil
}

// runTimeOf reads the time a thread ran from a schedstat line: its first
// field, in nanoseconds (then the time it waited to run, and its runs).
func runTimeOf(schedstat string) (time.Duration, error) {
	fields := strings.Fields(schedstat)
	if len(fields) == 0 {
		return 0, fmt.Errorf("empty line")
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// StartProgram starts the program at path, one outside Options.BinDir such
// as a benchmark's own server, as the component name with args: CPUTime,
// RSSKiB, StopComponent and Stop then treat it as the others.
func (cp *ControlPlane) StartProgram(name, path string, args ...string) error {
	return cp.launch(name, path, nil, args...)
}
