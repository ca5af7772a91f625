// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command node stands in for a kubelet on the local control plane: it
// serves only what a kube-apiserver asks of a kubelet for exec and
// port-forward, over verified TLS, so that streams through sessions/proxy
// can be tried end to end without containers. Its "containers" run two
// built-in commands, echo and cat, on a pseudo-terminal of their own when
// the exec asks for one (kubectl exec -t); every forwarded port is an echo
// service. Nothing runs on, or is reached on, the machine itself.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/creack/pty"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

const (
	idleTimeout           = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

func main() {
	addr := flag.String("listen", "127.0.0.1:10250", "address to serve on")
	certFile := flag.String("tls-cert-file", "", "serving certificate")
	keyFile := flag.String("tls-private-key-file", "", "serving key")
	clientCA := flag.String("client-ca-file", "", "CA of the kube-apiserver's client certificate")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*addr, *certFile, *keyFile, *clientCA); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func run(addr, certFile, keyFile, clientCAFile string) error {
	caPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return err
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(caPEM) {
		return errors.New("no certificate in --client-ca-file")
	}
	mux := http.NewServeMux()
	// The paths kube-apiserver asks a kubelet for; the command of an exec
	// is in its "command" parameters.
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", serveExec)
	mux.HandleFunc("/portForward/{namespace}/{pod}", servePortForward)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs, MinVersion: tls.VersionTLS12,
		// Streams are upgraded HTTP/1.1 connections.
		NextProtos: []string{"http/1.1"},
	}}
	return srv.ListenAndServeTLS(certFile, keyFile)
}

func serveExec(w http.ResponseWriter, req *http.Request) {
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := req.PathValue("namespace") + "/" + req.PathValue("pod")
	remotecommand.ServeExec(w, req, builtins{}, pod, "", req.PathValue("container"), req.URL.Query()["command"],
		opts, idleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// builtins runs the commands of the stand-in containers.
type builtins struct{}

func (builtins) ExecInContainer(_ context.Context, pod, _, container string, cmd []string, in io.Reader, out, _ io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	klog.InfoS("Exec", "pod", pod, "container", container, "command", cmd, "tty", tty)
	if tty {
		return runOnTerminal(cmd, in, out, resize)
	}
	return runBuiltin(cmd, in, out)
}

// runBuiltin runs a built-in command.
func runBuiltin(cmd []string, in io.Reader, out io.Writer) error {
	switch {
	case len(cmd) > 0 && cmd[0] == "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case len(cmd) == 1 && cmd[0] == "cat" && in != nil:
		_, err := io.Copy(out, in)
		return err
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("%q: only echo and cat run here", cmd), Code: 127}
}

// runOnTerminal runs a built-in command with a pseudo-terminal as its
// input and output, as a container runtime does for exec -t: the
// terminal's line discipline echoes what is typed, turns Enter into a new
// line and Ctrl-D into the end of input, and takes the client's window
// size, so that what the client sees is what a real terminal shows.
func runOnTerminal(cmd []string, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return err
	}
	defer ptmx.Close()
	go func() {
		for size := range resize {
			_ = pty.Setsize(ptmx, &pty.Winsize{Rows: size.Height, Cols: size.Width})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(ptmx, in) }()
	}
	// The terminal's output ends (EIO) once its last user closed it.
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, ptmx)
	}()
	var input io.Reader
	if in != nil {
		input = tty
	}
	err = runBuiltin(cmd, input, tty)
	_ = tty.Close()
	<-copied
	return err
}

func servePortForward(w http.ResponseWriter, req *http.Request) {
	opts, err := portforward.NewV4Options(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := req.PathValue("namespace") + "/" + req.PathValue("pod")
	portforward.ServePortForward(w, req, echoPorts{}, pod, "", opts, idleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// echoPorts answers every forwarded port with what it is sent.
type echoPorts struct{}

func (echoPorts) PortForward(_ context.Context, pod, _ string, port int32, stream io.ReadWriteCloser) error {
	klog.InfoS("Port-forward", "pod", pod, "port", port)
	defer stream.Close()
	_, err := io.Copy(stream, stream)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
