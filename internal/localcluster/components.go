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
	if bin == "clustergate-apiserver" && cp.opts.ClustergateMemoryLimit > 0 {
		// What memlimit derives from a container's limit; here no
		// cgroup enforces it.
		env = append(env, fmt.Sprintf("GOMEMLIMIT=%d", memlimit.Limit(cp.opts.ClustergateMemoryLimit, memlimit.Ratio)))
	}
	p, err := startProcess(cp.logs, name, filepath.Join(cp.opts.BinDir, bin), env, args...)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
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
	cp.procs[i].stop(15 * time.Second)
	return nil
}

// StartComponent starts a stopped component again with the same flags and
// waits until its APIServices are Available.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
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
	names, url, service := []string{"v1alpha1.clustergate.dev"}, cp.ClustergateURL, "clustergate-system/clustergate"
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
	ns, svc, _ := strings.Cut(service, "/")
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "annotate", "service", svc, "--overwrite",
		"clustergate.dev/restarted="+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	for _, n := range names {
		if err := cp.waitAPIService(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// checkAlive fails when a started process has exited without being stopped.
func (cp *ControlPlane) checkAlive() error {
	for _, p := range cp.procs {
		if done, err := p.exited(); done && !p.stopped {
			return fmt.Errorf("%s exited: %v; see %s", p.name, err, filepath.Join(cp.logs, p.name+".log"))
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
	pid, err := cp.PID(name)
	if err != nil {
		return 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "VmRSS:" {
			return strconv.Atoi(fields[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", name)
}
