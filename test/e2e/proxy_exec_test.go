// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// standInPod creates a pod in the shoot's default namespace, bound to the
// stand-in node that serves its exec and port-forward.
func standInPod(t *testing.T, name string) {
	t.Helper()
	standInPodIn(t, "default", name)
}

// standInPodIn is standInPod in the shoot's namespace ns.
func standInPodIn(t *testing.T, ns, name string) {
	t.Helper()
	// The shoot runs no service-account controller: the pod's account is
	// made by hand.
	apply(t, cp.ShootKubeconfig, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: %s}
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  containers: [{name: main, image: stand-in}]
`, ns, name, ns, localcluster.NodeName))
	// The node runs it, as far as kubectl port-forward can tell.
	kubectlAs(t, cp.ShootKubeconfig, "-n", ns, "patch", "pod", name, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running"}}`)
}

// TestProxyExecAndPortForward runs kubectl exec and port-forward as the
// owner through the whole path: kube-apiserver, clustergate, the shoot's
// kube-apiserver and its node.
func TestProxyExecAndPortForward(t *testing.T) {
	t.Parallel()
	_, _, session, _ := proxySessionWith(t, "proxy-exec", "exec", "1h", "admin")
	standInPod(t, "exec")

	t.Run("exec runs a command", func(t *testing.T) {
		if out := kubectlAs(t, session, "-n", "default", "exec", "exec", "--", "echo", "hello", "through", "the", "session"); out != "hello through the session\n" {
			t.Errorf("exec printed %q", out)
		}
	})
	t.Run("exec streams stdin", func(t *testing.T) {
		out, err := cp.Kubectl(context.Background(), session, []byte("ping\npong\n"), "-n", "default", "exec", "-i", "exec", "--", "cat")
		if err != nil || string(out) != "ping\npong\n" {
			t.Errorf("exec -i cat: %q %v", out, err)
		}
	})
	t.Run("a failing command reports its exit code", func(t *testing.T) {
		if msg := kubectlErr(t, session, "", "-n", "default", "exec", "exec", "--", "rm", "-rf", "/"); !strings.Contains(msg, "exit code 127") {
			t.Errorf("exec of an unknown command: %s", msg)
		}
	})
	t.Run("port-forward carries a connection", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", session, "-n", "default", "port-forward", "pod/exec", ":8080")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		// "Forwarding from 127.0.0.1:PORT -> 8080"
		lines := bufio.NewScanner(stdout)
		var local string
		for lines.Scan() {
			if _, err := fmt.Sscanf(lines.Text(), "Forwarding from 127.0.0.1:%s -> 8080", &local); err == nil {
				break
			}
		}
		if local == "" {
			t.Fatalf("kubectl port-forward did not start: %v %s", lines.Err(), stderr.String())
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		conn, err := net.Dial("tcp", "127.0.0.1:"+local)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprint(conn, "over the forwarded port\n")
		if echo, err := bufio.NewReader(conn).ReadString('\n'); err != nil || echo != "over the forwarded port\n" {
			t.Errorf("echo through the forwarded port: %q %v", echo, err)
		}
	})
}

// TestProxyExecEndsAtExpiry keeps an interactive exec open until its
// session expires.
func TestProxyExecEndsAtExpiry(t *testing.T) {
	_, _, session, s := proxySessionWith(t, "proxy-exec-expiry", "brief-exec", "15s", "admin")
	standInPod(t, "exec-expiry")
	stdin, hold := io.Pipe()
	cmd := exec.Command("kubectl", "--kubeconfig", session, "-n", "default", "exec", "-i", "exec-expiry", "--", "cat")
	cmd.Stdin = stdin
	out := &stampedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait returns once the copy of stdin ends, too.
	defer func() { _ = hold.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fmt.Fprintln(hold, "still here")
	// kubectl reports the stream's end at once, and exits once its stdin
	// ends too.
	eventually(t, time.Until(s.Status.ExpiresAt.Add(15*time.Second)), "kubectl exec reports the end of the stream", func() error {
		if !strings.Contains(out.String(), "error") {
			return fmt.Errorf("output so far %q", out.String())
		}
		return nil
	})
	late := out.when("error").Sub(s.Status.ExpiresAt.Time)
	t.Logf("kubectl exec reported the end of its stream %s after expiresAt: %q", late, out.String())
	if late < -time.Second || late > time.Second {
		t.Errorf("the exec stream ended %s after expiresAt, want within 1s", late)
	}
	// Data came back before the end. Not necessarily first: stdout and
	// stderr share the writer, and kubectl's WebSocket client may log a
	// discarded message of its own before the data (seen once in CI).
	if i := strings.Index(out.String(), "still here\n"); i < 0 || i > strings.Index(out.String(), "error") {
		t.Errorf("the stream did not carry data before: %q", out.String())
	}
	// The WebSocket stream ends with a close frame saying why.
	if !strings.Contains(out.String(), "proxy-exec-expiry/brief-exec: the session expired") {
		t.Errorf("kubectl does not say the session expired: %q", out.String())
	}
}

// stampedWriter keeps what is written and when each write came.
type stampedWriter struct {
	mu     sync.Mutex
	text   strings.Builder
	writes []stampedWrite
}

type stampedWrite struct {
	at   time.Time
	text string
}

func (w *stampedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, stampedWrite{time.Now(), string(b)})
	return w.text.Write(b)
}

func (w *stampedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}

// when is the time of the first write containing s.
func (w *stampedWriter) when(s string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, write := range w.writes {
		if strings.Contains(write.text, s) {
			return write.at
		}
	}
	return time.Time{}
}
