// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// runProbe runs one probe of container c from the host, at the pod's
// address, as the kubelet does: httpGet (HTTP or HTTPS, certificates not
// verified), tcpSocket, or exec inside the container.
func (p *podRuntime) runProbe(ctx context.Context, c *container, probe *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch h := probe.ProbeHandler; {
	case h.HTTPGet != nil:
		port, err := resolvePort(c.spec, h.HTTPGet.Port)
		if err != nil {
			return err
		}
		host := h.HTTPGet.Host
		if host == "" {
			host = p.sandbox.IP.String()
		}
		scheme := "http"
		if h.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: h.HTTPGet.Path}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "kube-probe/process-kubelet")
		for _, hdr := range h.HTTPGet.HTTPHeaders {
			req.Header.Add(hdr.Name, hdr.Value)
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe %s: status %d", u.String(), resp.StatusCode)
		}
		return nil
	case h.TCPSocket != nil:
		port, err := resolvePort(c.spec, h.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.sandbox.IP.String(), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case h.Exec != nil:
		cmd, err := c.nsenter(h.Exec.Command)
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			if cmd.Process != nil {
				_ = cmd.Process.Kill()
			}
		}()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("exec probe: %v: %s", err, out)
		}
		return nil
	}
	return fmt.Errorf("unsupported probe (gRPC probes are not implemented)")
}

// probeClient does not keep connections, which would hide a restarted
// server, and does not verify certificates, as the kubelet's does not.
var probeClient = &http.Client{
	Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// resolvePort finds a probe's port, by number or by the container port's name.
func resolvePort(c corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %q", port.StrVal)
}
