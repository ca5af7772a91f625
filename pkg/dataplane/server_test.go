// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// TestListen: the listener speaks verified TLS with the certificate it is
// given and the generic server's TLS settings, answers /readyz only once the
// issuers' keys are loaded (without saying why to anyone who asks), and
// sends everything below /sessions/ through the authenticating handler.
func TestListen(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := dynamiccertificates.NewStaticCertKeyContent("test", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var keysLoaded atomic.Bool
	auth := &Authenticator{
		Request: authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil }),
		checks: []func() error{func() error {
			if !keysLoaded.Load() {
				return errors.New("issuer https://login.example.com: fetching keys: connection refused")
			}
			return nil
		}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serving := &genericapiserver.SecureServingInfo{MinTLSVersion: tls.VersionTLS13}
	addr, err := Listen(ctx, Config{Address: "127.0.0.1:0"}, serving, cert, auth, &opener{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var body []byte
	get := func(path string) int {
		t.Helper()
		resp, err := client.Get("https://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode
	}

	if code := get(ReadyPath); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the keys = %d, want 503", code)
	}
	if strings.Contains(string(body), "login.example.com") || strings.Contains(string(body), "refused") {
		t.Errorf("/readyz tells anyone why: %s", body)
	}
	tls12 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}}}
	if resp, err := tls12.Get("https://" + addr.String() + ReadyPath); err == nil {
		resp.Body.Close()
		t.Errorf("a TLS 1.2 client got through with --tls-min-version=VersionTLS13")
	}
	keysLoaded.Store(true)
	if code := get(ReadyPath); code != http.StatusOK {
		t.Errorf("/readyz with the keys = %d, want 200", code)
	}
	if code := get("/sessions/sre/fix-etcd/api"); code != http.StatusUnauthorized {
		t.Errorf("a session's path without a token = %d, want 401", code)
	}
	if code := get("/api"); code != http.StatusNotFound {
		t.Errorf("a path outside /sessions/ = %d, want 404", code)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := client.Get("https://" + addr.String() + ReadyPath); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the listener still serves after its context ended")
}
