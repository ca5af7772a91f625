// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times: 100
// on every architecture Go supports.
const clockTicks = 100

// CPUTime is the processor time, user and system, a running component has
// used since it started.
func (cp *ControlPlane) CPUTime(name string) (time.Duration, error) {
	stat, err := cp.procFile(name, "stat")
	if err != nil {
		return 0, err
	}
	t, err := cpuTimeOf(stat)
	if err != nil {
		return 0, fmt.Errorf("%s: /proc stat: %w", name, err)
	}
	return t, nil
}

// cpuTimeOf reads user and system time from a /proc/<pid>/stat line. The
// command name in parentheses may hold spaces and parentheses: fields count
// from after its last ')', utime and stime are the 14th and 15th of the line.
func cpuTimeOf(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		t, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// StartProgram starts the program at path, one outside Options.BinDir such
// as a benchmark's own server, as the component name with args: CPUTime,
// RSSKiB, StopComponent and Stop then treat it as the others.
func (cp *ControlPlane) StartProgram(name, path string, args ...string) error {
	return cp.launch(name, path, nil, args...)
}
