// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podRuntime is one pod on the node: its sandbox, volumes and containers,
// from creation until its processes have ended and its sandbox is gone.
type podRuntime struct {
	prov *provider
	// notifyMu orders status notifications as the changes that made them.
	notifyMu sync.Mutex
	mu       sync.Mutex
	pod      *corev1.Pod
	dir      string
	sandbox  *sandbox
	vols     *volumes
	// containers is nil until the pod is prepared.
	containers []*container
	startTime  metav1.Time
	waiting    *corev1.ContainerStateWaiting
	// graceOverride is the deletion's grace period, once the pod is deleted.
	graceOverride *time.Duration
	// deleteRequested is set when the API deleted the pod (DeletePod), not
	// when the node stops it.
	deleteRequested bool
	cancel          context.CancelFunc
	done            chan struct{}
}

// update changes the pod's state under its lock and reports the new status.
func (p *podRuntime) update(change func()) {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	p.mu.Lock()
	change()
	snapshot := p.snapshotLocked()
	p.mu.Unlock()
	p.prov.notify(snapshot)
}

// read looks at the pod's state under its lock.
func (p *podRuntime) read(look func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	look()
}

// logf reports what happens to the pod in the node's log.
func (p *podRuntime) logf(format string, args ...any) {
	p.prov.logf("pod %s/%s: %s", p.pod.Namespace, p.pod.Name, fmt.Sprintf(format, args...))
}

// grace is how long a stopped container gets between SIGTERM and SIGKILL.
func (p *podRuntime) grace() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.graceOverride != nil {
		return *p.graceOverride
	}
	if g := p.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// run prepares the pod, retrying what can succeed later (an image not
// pushed yet, a claim not bound yet), runs its containers until they end or
// the pod is deleted, and removes its sandbox.
func (p *podRuntime) run(ctx context.Context) {
	defer close(p.done)
	defer p.teardown()
	p.update(func() {
		p.startTime = metav1.Now()
		p.waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	})
	for delay := time.Second; ; delay = min(2*delay, 30*time.Second) {
		start := time.Now()
		err := p.prepare(ctx)
		if err == nil {
			p.logf("prepared in %s", time.Since(start).Round(time.Millisecond))
			break
		}
		p.logf("preparing: %v", err)
		reason := "ContainerCreating"
		if strings.Contains(err.Error(), "pulling") {
			reason = "ErrImagePull"
		}
		p.update(func() { p.waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()} })
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
	for _, c := range p.containers {
		go c.run(ctx)
	}
	refresh := time.NewTicker(10 * time.Second)
	defer refresh.Stop()
	for _, c := range p.containers {
		for waiting := true; waiting; {
			select {
			case <-c.done:
				waiting = false
			case <-refresh.C:
				if err := p.vols.refresh(ctx); err != nil {
					p.logf("refreshing volumes: %v", err)
				}
			}
		}
	}
}

// prepare creates the sandbox, writes the volumes, pulls and unpacks the
// images and plans each container's launch.
func (p *podRuntime) prepare(ctx context.Context) error {
	// Running the app containers without them would be wrong silently.
	if len(p.pod.Spec.InitContainers) > 0 {
		return fmt.Errorf("this node does not run init containers")
	}
	if p.sandbox == nil {
		sb, err := p.prov.net.add(string(p.pod.UID))
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.sandbox = sb
		p.mu.Unlock()
	}
	p.vols = &volumes{client: p.prov.client, pod: p.pod, podIP: p.sandbox.IP.String(), dir: filepath.Join(p.dir, "volumes")}
	if err := p.vols.setup(ctx); err != nil {
		return err
	}
	etc, err := p.writeEtc()
	if err != nil {
		return err
	}
	var containers []*container
	for _, spec := range p.pod.Spec.Containers {
		c, err := p.newContainer(ctx, spec, etc)
		if err != nil {
			return fmt.Errorf("container %s: %w", spec.Name, err)
		}
		containers = append(containers, c)
	}
	p.update(func() {
		p.containers = containers
		p.waiting = nil
	})
	return nil
}

// hostname is the pod's host name: spec.hostname (a StatefulSet's pods
// have theirs) or its name.
func (p *podRuntime) hostname() string {
	if p.pod.Spec.Hostname != "" {
		return p.pod.Spec.Hostname
	}
	return p.pod.Name
}

// writeEtc writes the pod's /etc/hosts, /etc/hostname and
// /etc/resolv.conf, mounted into every container.
func (p *podRuntime) writeEtc() ([]mountSpec, error) {
	dir := filepath.Join(p.dir, "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	names := p.hostname()
	if sub := p.pod.Spec.Subdomain; sub != "" {
		names = fmt.Sprintf("%s.%s.%s.svc.cluster.local %s", p.hostname(), sub, p.pod.Namespace, names)
	}
	files := map[string]string{
		"hosts":    fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost\n%s\t%s\n", p.sandbox.IP, names),
		"hostname": p.hostname() + "\n",
	}
	var nameservers, searches []string
	if c := p.pod.Spec.DNSConfig; c != nil {
		nameservers, searches = c.Nameservers, c.Searches
	}
	files["resolv.conf"] = resolvConf(p.prov.net.gateway.String(), p.pod.Namespace, string(p.pod.Spec.DNSPolicy), nameservers, searches)
	var mounts []mountSpec
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return nil, err
		}
		mounts = append(mounts, mountSpec{Source: path, Target: "/etc/" + name, ReadOnly: true})
	}
	return mounts, nil
}

// deleted reports whether the API deleted the pod.
func (p *podRuntime) deleted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deleteRequested
}

// terminate stops the pod's containers with the deletion's grace period;
// run then removes the sandbox. It does not wait.
func (p *podRuntime) terminate(grace time.Duration) {
	p.mu.Lock()
	if p.graceOverride == nil || grace < *p.graceOverride {
		p.graceOverride = &grace
	}
	p.mu.Unlock()
	p.cancel()
}

// teardown removes the sandbox and the pod's files but its logs, and
// reports the final status.
func (p *podRuntime) teardown() {
	if p.sandbox != nil {
		p.prov.net.remove(p.sandbox)
	}
	for _, sub := range []string{"containers", "volumes", "etc"} {
		if err := os.RemoveAll(filepath.Join(p.dir, sub)); err != nil {
			p.logf("removing files: %v", err)
		}
	}
	p.update(func() {
		if p.waiting != nil {
			p.waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: "pod deleted before it started"}
		}
	})
	p.logf("stopped")
}

// snapshotLocked is the pod with its current status.
func (p *podRuntime) snapshotLocked() *corev1.Pod {
	pod := p.pod.DeepCopy()
	s := &pod.Status
	s.HostIP = p.prov.cfg.internalIP
	s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	if p.sandbox != nil {
		s.PodIP = p.sandbox.IP.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if !p.startTime.IsZero() {
		s.StartTime = &p.startTime
	}
	s.ContainerStatuses = nil
	allReady, running, failed, terminated := true, false, false, 0
	for i, spec := range p.pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
		if p.waiting != nil {
			cs.State.Waiting = p.waiting
		}
		if i < len(p.containers) {
			cs = *p.containers[i].status.DeepCopy()
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		switch {
		case cs.State.Running != nil, cs.State.Waiting != nil && cs.RestartCount+boolInt(cs.LastTerminationState.Terminated != nil) > 0:
			running = true
		case cs.State.Terminated != nil:
			terminated++
			failed = failed || cs.State.Terminated.ExitCode != 0
		}
	}
	switch {
	case len(p.containers) > 0 && terminated == len(p.containers) && failed:
		s.Phase = corev1.PodFailed
	case len(p.containers) > 0 && terminated == len(p.containers):
		s.Phase = corev1.PodSucceeded
	case running || terminated > 0:
		s.Phase = corev1.PodRunning
	default:
		s.Phase = corev1.PodPending
	}
	ready := allReady && s.Phase == corev1.PodRunning
	now := metav1.Now()
	s.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReadyToStartContainers, Status: condition(p.sandbox != nil)},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: condition(ready)},
		{Type: corev1.PodReady, Status: condition(ready)},
	}
	for i := range s.Conditions {
		s.Conditions[i].LastTransitionTime = p.transition(s.Conditions[i], now)
	}
	return pod
}

// transition keeps a condition's last transition time while its status
// stays the same.
func (p *podRuntime) transition(c corev1.PodCondition, now metav1.Time) metav1.Time {
	for _, old := range p.pod.Status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				return old.LastTransitionTime
			}
			break
		}
	}
	for i := range p.pod.Status.Conditions {
		if p.pod.Status.Conditions[i].Type == c.Type {
			p.pod.Status.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: now}
			return now
		}
	}
	p.pod.Status.Conditions = append(p.pod.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: now})
	return now
}

// condition is a condition status of b.
func condition(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// boolInt is 1 for true.
func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
