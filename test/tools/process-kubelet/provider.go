// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/creack/pty"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// provider is virtual-kubelet's provider of this node: it runs pods as
// host processes (podRuntime) and answers the kubelet API.
type provider struct {
	cfg    *config
	client kubernetes.Interface
	images *imageStore
	net    *network
	// pods lists the API's pods bound to the node, to find runtimes whose
	// pod is gone without a DeletePod call.
	pods corelisters.PodLister
	// forwardPort is the kube-apiserver's port on the gateway address, when
	// the node forwards it to pods.
	forwardPort string

	mu       sync.Mutex
	runtimes map[types.UID]*podRuntime
	notifyCB func(*corev1.Pod)
}

var (
	_ nodeutil.Provider = (*provider)(nil)
	_ interface {
		NotifyPods(context.Context, func(*corev1.Pod))
	} = (*provider)(nil)
)

// logf writes to the node's log.
func (pr *provider) logf(format string, args ...any) { log.Printf(format, args...) }

// notify hands a pod's new status to virtual-kubelet.
func (pr *provider) notify(pod *corev1.Pod) {
	pr.mu.Lock()
	cb := pr.notifyCB
	pr.mu.Unlock()
	if cb != nil {
		cb(pod)
	}
}

// NotifyPods registers virtual-kubelet's callback for status changes.
func (pr *provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	pr.mu.Lock()
	pr.notifyCB = cb
	pr.mu.Unlock()
}

// CreatePod starts the pod in the background; its status follows through
// NotifyPods.
func (pr *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if _, ok := pr.runtimes[pod.UID]; ok {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &podRuntime{prov: pr, pod: pod.DeepCopy(), cancel: cancel, done: make(chan struct{}),
		dir: filepath.Join(pr.cfg.rootDir, "pods", string(pod.UID))}
	pr.runtimes[pod.UID] = p
	go func() {
		p.run(ctx)
		if ctx.Err() == nil {
			// The containers ended by themselves, as the restart policy
			// says: the pod keeps its status and logs until the API
			// deletes it.
			<-ctx.Done()
		}
		pr.mu.Lock()
		delete(pr.runtimes, pod.UID)
		pr.mu.Unlock()
		if p.deleted() {
			pr.remove(pod)
		}
	}()
	return nil
}

// remove deletes a pod whose deletion the API asked for from the API once
// its processes have ended, as the kubelet does: virtual-kubelet itself
// waits out the whole grace period, since a status change does not wake it.
// The UID precondition spares a successor of the same name.
func (pr *provider) remove(pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := pr.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		pr.logf("pod %s/%s: deleting from the API: %v", pod.Namespace, pod.Name, err)
	}
}

// UpdatePod changes nothing: a pod's spec is immutable but for images,
// which this node does not replace in place.
func (pr *provider) UpdatePod(context.Context, *corev1.Pod) error { return nil }

// DeletePod stops the pod's containers with the deletion's grace period, in
// the background; the terminal status follows through NotifyPods.
func (pr *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	// By UID, not by name: a StatefulSet's pod comes back under the same
	// name while the deletion of the old one may still be in virtual-
	// kubelet's queue, and that deletion must not stop the new pod.
	pr.mu.Lock()
	p := pr.runtimes[pod.UID]
	pr.mu.Unlock()
	if p == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	grace := p.grace()
	if s := pod.DeletionGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	p.mu.Lock()
	p.deleteRequested = true
	p.mu.Unlock()
	p.terminate(grace)
	return nil
}

// runtime finds a runtime of a pod by name: the newest one whose deletion
// was not asked for, else the newest (whose logs and exec still serve).
func (pr *provider) runtime(namespace, name string) *podRuntime {
	if p := pr.find(namespace, name, false); p != nil {
		return p
	}
	return pr.find(namespace, name, true)
}

// find finds the newest runtime of a pod by name, one being deleted only
// with deleting.
func (pr *provider) find(namespace, name string, deleting bool) *podRuntime {
	pr.mu.Lock()
	runtimes := make([]*podRuntime, 0, len(pr.runtimes))
	for _, p := range pr.runtimes {
		if p.pod.Namespace == namespace && p.pod.Name == name {
			runtimes = append(runtimes, p)
		}
	}
	pr.mu.Unlock()
	var found *podRuntime
	for _, p := range runtimes {
		if p.deleted() == deleting && (found == nil || found.pod.CreationTimestamp.Before(&p.pod.CreationTimestamp)) {
			found = p
		}
	}
	return found
}

// GetPod returns the pod with its current status. A pod whose deletion was
// asked for is not returned: virtual-kubelet asks by name, and would take a
// successor of the same name (a StatefulSet's, after a forced deletion,
// created while the old pod still stops) for it and never start it.
func (pr *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p := pr.find(namespace, name, false)
	if p == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshotLocked(), nil
}

// GetPodStatus returns the pod's current status.
func (pr *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := pr.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod on the node.
func (pr *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	pr.mu.Lock()
	runtimes := make([]*podRuntime, 0, len(pr.runtimes))
	for _, p := range pr.runtimes {
		runtimes = append(runtimes, p)
	}
	pr.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(runtimes))
	for _, p := range runtimes {
		p.mu.Lock()
		pods = append(pods, p.snapshotLocked())
		p.mu.Unlock()
	}
	return pods, nil
}

// collect stops runtimes whose pod is gone from the API (deleted while it
// was still starting, which virtual-kubelet force-deletes without asking
// the provider), every few seconds until ctx ends.
func (pr *provider) collect(ctx context.Context) {
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		pr.mu.Lock()
		var gone []*podRuntime
		for uid, p := range pr.runtimes {
			if pod, err := pr.pods.Pods(p.pod.Namespace).Get(p.pod.Name); err != nil || pod.UID != uid {
				gone = append(gone, p)
			}
		}
		pr.mu.Unlock()
		for _, p := range gone {
			p.terminate(0)
		}
	}
}

// shutdown stops every pod, each with its grace period up to the node's
// shutdown grace period, and waits. The pods stay in the API, as a
// kubelet's do when its node shuts down.
func (pr *provider) shutdown() {
	pr.mu.Lock()
	runtimes := make([]*podRuntime, 0, len(pr.runtimes))
	for _, p := range pr.runtimes {
		runtimes = append(runtimes, p)
	}
	pr.mu.Unlock()
	for _, p := range runtimes {
		p.terminate(min(p.grace(), pr.cfg.shutdownGrace))
	}
	for _, p := range runtimes {
		<-p.done
	}
}

// container finds a container of a pod on the node.
func (pr *provider) container(namespace, podName, name string) (*container, error) {
	p := pr.runtime(namespace, podName)
	if p == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, podName)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.containers {
		if c.spec.Name == name {
			return c, nil
		}
	}
	return nil, errdefs.NotFoundf("container %s of pod %s/%s has not started", name, namespace, podName)
}

// RunInContainer runs cmd inside the container (kubectl exec), on a
// pseudo-terminal of its own when the client asks for one (exec -t).
func (pr *provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	c, err := pr.container(namespace, podName, containerName)
	if err != nil {
		return err
	}
	command, err := c.nsenter(cmd)
	if err != nil {
		return err
	}
	if attach.TTY() {
		err = runOnTerminal(ctx, command, attach)
	} else {
		err = runAttached(ctx, command, attach)
	}
	var exited *exec.ExitError
	if errors.As(err, &exited) && exited.Exited() {
		// The node API reports the exit code (kubectl exec exits with it)
		// only for this type.
		return utilexec.CodeExitError{Err: err, Code: exited.ExitCode()}
	}
	return err
}

// runAttached runs command with the client's streams as its own, until it
// exits or ctx ends.
func runAttached(ctx context.Context, command *exec.Cmd, attach api.AttachIO) error {
	if attach.Stdin() != nil {
		command.Stdin = attach.Stdin()
	}
	command.Stdout, command.Stderr = attach.Stdout(), attach.Stderr()
	if err := command.Start(); err != nil {
		return err
	}
	defer context.AfterFunc(ctx, func() { _ = command.Process.Kill() })()
	return command.Wait()
}

// runOnTerminal runs command on a new pseudo-terminal, its standard
// streams and controlling terminal, as a container runtime does for
// exec -t: the terminal echoes what the client types and takes the
// client's window sizes; everything it writes goes to the client's
// standard output.
func runOnTerminal(ctx context.Context, command *exec.Cmd, attach api.AttachIO) error {
	terminal, err := pty.Start(command)
	if err != nil {
		return err
	}
	defer terminal.Close()
	defer context.AfterFunc(ctx, func() { _ = command.Process.Kill() })()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case size := <-attach.Resize():
				// virtual-kubelet passes zero sizes on once the client's
				// resize stream ended.
				if size.Width == 0 && size.Height == 0 {
					return
				}
				_ = pty.Setsize(terminal, &pty.Winsize{Cols: size.Width, Rows: size.Height})
			case <-done:
				return
			}
		}
	}()
	if in := attach.Stdin(); in != nil {
		go func() { _, _ = io.Copy(terminal, in) }()
	}
	out := io.Writer(io.Discard)
	if attach.Stdout() != nil {
		out = attach.Stdout()
	}
	// The terminal's output ends (EIO) once no process holds it open.
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, terminal)
	}()
	err = command.Wait()
	select {
	case <-copied:
	case <-ctx.Done():
	}
	return err
}

// AttachToContainer is not supported: a container's output goes to its log.
func (pr *provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by this node; use kubectl logs")
}

// GetStatsSummary reports no usage.
func (pr *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{}, nil
}

// GetMetricsResource reports no metrics.
func (pr *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}

// PortForward connects a stream to a port of the pod's address.
func (pr *provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	p := pr.runtime(namespace, podName)
	if p == nil || p.sandbox == nil {
		return errdefs.NotFoundf("pod %s/%s has no address on this node", namespace, podName)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.sandbox.IP.String(), strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
