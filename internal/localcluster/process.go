// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is a binary of the control plane running in the background, its
// output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	// env is what the process has in its environment beyond this one's.
	env  []string
	done chan struct{}
	err  error
	// stopped is set when the process was stopped on purpose.
	stopped bool
}

// startProcess starts bin with args and, beyond this process's environment,
// env, writing its output to logDir/name.log. The process dies with its
// parent, so that a killed test run leaves no servers behind.
func startProcess(logDir, name, bin string, env []string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, env: env, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM and waits up to grace for the process to end before it
// is killed.
func (p *process) stop(grace time.Duration) {
	p.stopped = true
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill ends the process and its children with SIGKILL, as a crash or the
// kernel's OOM killer would: nothing of its shutdown runs.
func (p *process) kill() {
	p.stopped = true
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}
