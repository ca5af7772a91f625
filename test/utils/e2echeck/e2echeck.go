// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2echeck holds the checks that the end-to-end tests of the local
// control plane (test/e2e) and of the shipped install (test/install) share.
package e2echeck

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Eventually retries f until it succeeds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WatchUntilEnd starts a raw watch of the ConfigMaps in the default
// namespace with cfg and returns a channel that receives the watch's last
// line when the stream ends.
func WatchUntilEnd(t testing.TB, cfg *rest.Config) <-chan string {
	t.Helper()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: %s %s", resp.Status, b)
	}
	ended := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		last := ""
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			last = lines.Text()
		}
		ended <- last
	}()
	return ended
}

// CertSerial returns the serial number of the client certificate of a
// kubeconfig's current context.
func CertSerial(t testing.TB, kubeconfig []byte) string {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatal("the kubeconfig has no user in its current context")
	}
	block, _ := pem.Decode(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if block == nil {
		t.Fatal("no client certificate in the kubeconfig")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

// SyncBuffer is a buffer that a command writes while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
