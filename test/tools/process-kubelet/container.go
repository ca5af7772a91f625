// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container is one container of a pod: its processes, one after another
// as the restart policy says, and what the pod's status reports of them.
// Its fields are guarded by the pod's mutex.
type container struct {
	pod    *podRuntime
	spec   corev1.Container
	launch launchSpec
	// logDir holds one log file per run: <restartCount>.log.
	logDir string
	status corev1.ContainerStatus
	// pid is the running process's, 0 between runs.
	pid int
	// kill ends the current run early, with a grace period; nil between runs.
	kill func(grace time.Duration)
	// done is closed when the container will not run again.
	done chan struct{}
}

// maxBackoff caps the delay between restarts, as the kubelet's
// CrashLoopBackOff does; the first restart is immediate, then 10 s, doubling.
const maxBackoff = 5 * time.Minute

// run starts the container's processes until the restart policy or the
// pod's end (ctx) stops it.
func (c *container) run(ctx context.Context) {
	defer close(c.done)
	var backoff time.Duration
	for {
		started := time.Now()
		code, err := c.runOnce(ctx)
		finished := time.Now()
		term := &corev1.ContainerStateTerminated{
			ExitCode:   int32(code),
			Reason:     "Completed",
			StartedAt:  metav1.NewTime(started),
			FinishedAt: metav1.NewTime(finished),
		}
		if code != 0 {
			term.Reason = "Error"
		}
		if err != nil {
			term.Reason, term.Message = "StartError", err.Error()
		}
		restart := ctx.Err() == nil && shouldRestart(c.pod.pod.Spec.RestartPolicy, code)
		c.pod.update(func() {
			c.pid, c.kill = 0, nil
			c.status.Ready = false
			c.status.State = corev1.ContainerState{Terminated: term}
			if restart {
				c.status.LastTerminationState = corev1.ContainerState{Terminated: term}
				c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "CrashLoopBackOff", Message: fmt.Sprintf("back-off %s restarting failed container", backoff)}}
			}
		})
		if !restart {
			return
		}
		// A run that lasted 10 minutes resets the back-off.
		if finished.Sub(started) > 10*time.Minute {
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(max(2*backoff, 10*time.Second), maxBackoff)
		c.pod.update(func() { c.status.RestartCount++ })
	}
}

// shouldRestart applies a pod's restart policy to an exit code.
func shouldRestart(policy corev1.RestartPolicy, code int) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// runOnce runs the container's process to its end and returns its exit
// code: 128 plus the signal's number when a signal ended it.
func (c *container) runOnce(ctx context.Context) (int, error) {
	if err := os.MkdirAll(c.logDir, 0o700); err != nil {
		return 128, err
	}
	var restarts int32
	c.pod.read(func() { restarts = c.status.RestartCount })
	specFile := filepath.Join(c.logDir, "launch.json")
	data, err := json.Marshal(c.launch)
	if err != nil {
		return 128, err
	}
	if err := os.WriteFile(specFile, data, 0o600); err != nil {
		return 128, err
	}
	logFile, err := os.OpenFile(c.logPath(restarts), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 128, err
	}
	defer logFile.Close()
	cmd := initCmd(specFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return 128, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	pid := cmd.Process.Pid
	kill := func(grace time.Duration) { stopGroup(pid, func() time.Duration { return grace }, exited) }
	c.pod.update(func() {
		c.pid, c.kill = pid, kill
		c.status.ContainerID = "process://" + strconv.Itoa(pid)
		c.status.Started = ptrTo(true)
		c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		// Without a readiness probe, a running container is ready.
		c.status.Ready = c.spec.ReadinessProbe == nil
	})
	probeCtx, stopProbes := context.WithCancel(ctx)
	go c.probe(probeCtx, kill)
	select {
	case <-exited:
	case <-ctx.Done():
		stopGroup(pid, c.pod.grace, exited)
	}
	stopProbes()
	return exitCode(cmd.ProcessState), nil
}

// logPath is the log file of the container's run after restarts restarts.
func (c *container) logPath(restarts int32) string {
	return filepath.Join(c.logDir, strconv.Itoa(int(restarts))+".log")
}

// stopGroup sends SIGTERM to the process group of pid, and SIGKILL once
// grace has passed without it exiting; it returns when the leader has
// exited. The group's other processes get SIGKILL then too. grace is read
// again while it waits: a shorter grace period that comes later (the node
// stopping while a deleted pod stops) applies to the stop under way.
func stopGroup(pid int, grace func() time.Duration, exited <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-exited:
			waiting = false
		case <-tick.C:
			if time.Since(start) >= grace() {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-exited
				waiting = false
			}
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// exitCode reads how a process ended, as a container runtime reports it.
func exitCode(s *os.ProcessState) int {
	if s == nil {
		return 128
	}
	if ws, ok := s.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return s.ExitCode()
}

// probe runs the container's startup, liveness and readiness probes while
// the current run lasts; a failed liveness probe ends the run with the
// pod's grace period, and the restart policy decides what follows.
func (c *container) probe(ctx context.Context, kill func(time.Duration)) {
	if p := c.spec.StartupProbe; p != nil {
		if !c.loop(ctx, p, func(bool) bool { return false }) {
			if ctx.Err() == nil {
				kill(c.pod.grace())
			}
			return
		}
	}
	c.pod.update(func() { c.status.Started = ptrTo(true) })
	if p := c.spec.ReadinessProbe; p != nil {
		go c.loop(ctx, p, func(ok bool) bool {
			c.pod.update(func() { c.status.Ready = ok })
			return true
		})
	}
	if p := c.spec.LivenessProbe; p != nil {
		if !c.loop(ctx, p, func(ok bool) bool { return ok }) && ctx.Err() == nil {
			c.pod.logf("container %s failed its liveness probe, restarting", c.spec.Name)
			kill(c.pod.grace())
		}
	}
}

// loop runs probe p every period and calls result with each thresholded
// outcome (successThreshold successes or failureThreshold failures in a
// row). It stops, returning false, when result returns false on a failure,
// or when ctx ends; it returns true when result returns false on success.
func (c *container) loop(ctx context.Context, p *corev1.Probe, result func(ok bool) bool) bool {
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	successes, failures := 0, 0
	timer := time.NewTimer(seconds(p.InitialDelaySeconds, 0))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		err := c.pod.runProbe(ctx, c, p, timeout)
		if err == nil {
			successes, failures = successes+1, 0
			if successes >= int(max(p.SuccessThreshold, 1)) && !result(true) {
				return true
			}
		} else {
			successes, failures = 0, failures+1
			if failures >= int(max(p.FailureThreshold, 1)) {
				c.pod.logf("probe of %s failed: %v", c.spec.Name, err)
				if !result(false) {
					return false
				}
			}
		}
		timer.Reset(period)
	}
}

// seconds is s seconds, or def when s is 0.
func seconds(s int32, def int) time.Duration {
	if s <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(s) * time.Second
}

// ptrTo points at v.
func ptrTo[T any](v T) *T { return &v }

// errNotRunning is returned for a container without a process.
var errNotRunning = errors.New("container is not running")

// nsenter is a command that runs argv inside the running container: its
// namespaces, root, working directory and user.
func (c *container) nsenter(argv []string) (*exec.Cmd, error) {
	var pid int
	var env []string
	c.pod.read(func() { pid, env = c.pid, c.launch.Env })
	if pid == 0 {
		return nil, errNotRunning
	}
	args := []string{"--target", strconv.Itoa(pid), "--mount", "--uts", "--net", "--root", "--wd",
		"--setuid", strconv.Itoa(int(c.launch.UID)), "--setgid", strconv.Itoa(int(c.launch.GID)), "--"}
	cmd := exec.Command("nsenter", append(args, argv...)...)
	cmd.Env = env
	return cmd, nil
}
