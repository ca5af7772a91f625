// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/proxy"
)

// trackerOpener opens every request through the proxy's real tracker to
// one target, as the session storage does once the owner check passed.
type trackerOpener struct {
	tracker *proxy.Tracker
	target  proxy.Target
}

func (o trackerOpener) Open(_ context.Context, _, path string, way proxy.Way, responder rest.Responder) (http.Handler, error) {
	t := o.target
	t.Way = way
	return o.tracker.Handler(t, path, responder), nil
}

// BenchmarkDataPlane measures a small GET through the data plane's
// listener (the generic server's secure serving, the JWT authenticator of
// a local OIDC issuer, the proxy handler) and straight from the same TLS
// backend, HTTP/2 on both legs: compare the ns/op of dataplane and direct.
// Run it with -cpuprofile to see where the data plane's own time goes.
func BenchmarkDataPlane(b *testing.B) {
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	body := []byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	back.EnableHTTP2 = true
	back.StartTLS()
	defer back.Close()
	backURL, _ := url.Parse(back.URL)
	backTransport := back.Client().Transport.(*http.Transport)

	i := newIssuer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	auth, err := LoadAuthenticator(ctx, writeConfig(b, jwtConfig(i.server.URL, i.caPEM(), "")), false)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); auth.HealthCheck() != nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	now := time.Now()
	bearer := "Bearer " + token(b, i.key, jwt.Claims{Issuer: i.server.URL, Subject: "alice", Audience: jwt.Audience{"clustergate-data-plane"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))})

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := dynamiccertificates.NewStaticCertKeyContent("bench", certPEM, keyPEM)
	if err != nil {
		b.Fatal(err)
	}
	sessions := trackerOpener{tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{}), target: proxy.Target{
		UID: "s1", Namespace: "sre", Name: "fix", Owner: "oidc:alice", ExpiresAt: now.Add(time.Hour), Backend: backURL, Transport: backTransport}}
	addr, err := Listen(ctx, Config{Address: "127.0.0.1:0"}, &genericapiserver.SecureServingInfo{}, cert, auth, sessions)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	front := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}

	for _, tt := range []struct {
		name   string
		client *http.Client
		url    string
		bearer string
	}{
		{"direct", &http.Client{Transport: backTransport}, back.URL + "/api/v1/namespaces/default", ""},
		{"dataplane", front, "https://" + addr.String() + "/sessions/sre/fix/api/v1/namespaces/default", bearer},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for range b.N {
				req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
				if tt.bearer != "" {
					req.Header.Set("Authorization", tt.bearer)
				}
				resp, err := tt.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); resp.StatusCode != http.StatusOK || n != int64(len(body)) {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
				}
				resp.Body.Close()
			}
		})
	}
}
