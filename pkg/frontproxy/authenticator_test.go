// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package frontproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// testCA is a CA that issues client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t testing.TB, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	return testCA{cert: parse(t, template, template, &key.PublicKey, key), key: key}
}

// client issues a client certificate for cn, valid until notAfter.
func (ca testCA) client(t testing.TB, cn string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	return parse(t, template, ca.cert, &key.PublicKey, ca.key)
}

func parse(t testing.TB, template, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// caContent is the front proxy's CA as the server loads it; replacing
// ca is a rotation, loaded false is a CA not loaded yet.
type caContent struct {
	dynamiccertificates.Notifier
	ca     testCA
	pool   *x509.CertPool
	loaded bool
}

func (c *caContent) set(ca testCA) {
	c.ca, c.pool, c.loaded = ca, x509.NewCertPool(), true
	c.pool.AddCert(ca.cert)
}

func (*caContent) Name() string                     { return "front-proxy-ca" }
func (c *caContent) CurrentCABundleContent() []byte { return c.ca.cert.Raw }
func (c *caContent) VerifyOptions() (x509.VerifyOptions, bool) {
	opts := x509request.DefaultVerifyOptions()
	opts.Roots = c.pool
	return opts, c.loaded
}

func headers(names ...string) headerrequest.StringSliceProvider {
	return headerrequest.StaticStringSlice(names)
}

// newAuthenticator returns the authenticator of the front proxy whose CA
// content holds, allowing the client name front-proxy, with the count of
// its verifications.
func newAuthenticator(content *caContent, clock *clocktesting.FakePassiveClock) (*Authenticator, *int) {
	a := New(&authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders: headers("X-Remote-User"), UIDHeaders: headers("X-Remote-Uid"), GroupHeaders: headers("X-Remote-Group"),
		ExtraHeaderPrefixes: headers("X-Remote-Extra-"), CAContentProvider: content, AllowedClientNames: headers("front-proxy"),
	}, clock)
	verified := 0
	a.verify = func(c *x509.Certificate, opts x509.VerifyOptions) ([][]*x509.Certificate, error) {
		verified++
		return c.Verify(opts)
	}
	return a, &verified
}

// request is a request of the front proxy presenting cert, for user.
func request(cert *x509.Certificate, user string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://clustergate/apis", nil)
	if cert != nil {
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	}
	if user != "" {
		req.Header.Set("X-Remote-User", user)
		req.Header.Add("X-Remote-Group", "team-a")
	}
	return req
}

func TestAuthenticateRequest(t *testing.T) {
	t.Parallel()
	frontCA, otherCA := newCA(t, "front-proxy-ca"), newCA(t, "other-ca")
	tests := []struct {
		name    string
		cert    *x509.Certificate
		user    string
		notYet  bool
		want    string
		wantErr bool
	}{
		{name: "the front proxy's certificate and a user", cert: frontCA.client(t, "front-proxy", now.Add(time.Hour)), user: "alice", want: "alice"},
		{name: "no certificate", user: "alice"},
		{name: "a certificate of another CA", cert: otherCA.client(t, "front-proxy", now.Add(time.Hour)), user: "alice", wantErr: true},
		{name: "a common name the front proxy does not have", cert: frontCA.client(t, "mallory", now.Add(time.Hour)), user: "alice", wantErr: true},
		{name: "an expired certificate", cert: frontCA.client(t, "front-proxy", now.Add(-time.Minute)), user: "alice", wantErr: true},
		{name: "no user", cert: frontCA.client(t, "front-proxy", now.Add(time.Hour))},
		{name: "the CA not loaded yet", cert: frontCA.client(t, "front-proxy", now.Add(time.Hour)), user: "alice", notYet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := &caContent{}
			content.set(frontCA)
			content.loaded = !tt.notYet
			a, _ := newAuthenticator(content, clocktesting.NewFakePassiveClock(now))
			resp, ok, err := a.AuthenticateRequest(request(tt.cert, tt.user))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if ok != (tt.want != "") {
				t.Fatalf("authenticated = %v, want %v", ok, tt.want != "")
			}
			if !ok {
				return
			}
			if got := resp.User.GetName(); got != tt.want {
				t.Errorf("user = %q, want %q", got, tt.want)
			}
			if got := resp.User.GetGroups(); len(got) != 1 || got[0] != "team-a" {
				t.Errorf("groups = %q, want [team-a]", got)
			}
		})
	}
}

// TestVerificationKept follows one front proxy's certificate through
// requests: verified once while nothing changes, again when the CA is
// replaced, when maxAge passed, and when the certificate expired, which
// no kept verification outlives.
func TestVerificationKept(t *testing.T) {
	t.Parallel()
	frontCA, nextCA := newCA(t, "front-proxy-ca"), newCA(t, "front-proxy-ca-2")
	cert := frontCA.client(t, "front-proxy", now.Add(90*time.Second))
	content := &caContent{}
	content.set(frontCA)
	clock := clocktesting.NewFakePassiveClock(now)
	a, verified := newAuthenticator(content, clock)
	steps := []struct {
		name         string
		change       func()
		wantOK       bool
		wantVerified int
	}{
		{name: "first request", change: func() {}, wantOK: true, wantVerified: 1},
		{name: "second request, kept", change: func() {}, wantOK: true, wantVerified: 1},
		{name: "half a minute later, kept", change: func() { clock.SetTime(now.Add(30 * time.Second)) }, wantOK: true, wantVerified: 1},
		{name: "past maxAge, verified again", change: func() { clock.SetTime(now.Add(61 * time.Second)) }, wantOK: true, wantVerified: 2},
		{name: "the certificate expired", change: func() { clock.SetTime(now.Add(91 * time.Second)) }, wantVerified: 3},
		{name: "the CA replaced", change: func() { clock.SetTime(now.Add(30 * time.Second)); content.set(nextCA) }, wantVerified: 4},
		{name: "the CA back", change: func() { content.set(frontCA) }, wantOK: true, wantVerified: 5},
	}
	for _, step := range steps {
		step.change()
		_, ok, err := a.AuthenticateRequest(request(cert, "alice"))
		if ok != step.wantOK || (err == nil) != step.wantOK {
			t.Errorf("%s: authenticated %v, error %v; want authenticated %v", step.name, ok, err, step.wantOK)
		}
		if *verified != step.wantVerified {
			t.Errorf("%s: %d verifications, want %d", step.name, *verified, step.wantVerified)
		}
	}
}

// BenchmarkAuthenticateRequest compares the generic request-header
// authenticator, which verifies the certificate on every request, with
// this one.
func BenchmarkAuthenticateRequest(b *testing.B) {
	frontCA := newCA(b, "front-proxy-ca")
	cert := frontCA.client(b, "front-proxy", time.Now().Add(time.Hour))
	content := &caContent{}
	content.set(frontCA)
	cfg := &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders: headers("X-Remote-User"), UIDHeaders: headers("X-Remote-Uid"), GroupHeaders: headers("X-Remote-Group"),
		ExtraHeaderPrefixes: headers("X-Remote-Extra-"), CAContentProvider: content, AllowedClientNames: headers("front-proxy"),
	}
	generic := headerrequest.NewDynamicVerifyOptionsSecure(content.VerifyOptions, cfg.AllowedClientNames, cfg.UsernameHeaders,
		cfg.UIDHeaders, cfg.GroupHeaders, cfg.ExtraHeaderPrefixes)
	b.Run("generic", func(b *testing.B) {
		for range b.N {
			if _, ok, err := generic.AuthenticateRequest(request(cert, "alice")); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	kept := New(cfg, clocktesting.NewFakePassiveClock(time.Now()))
	b.Run("kept", func(b *testing.B) {
		for range b.N {
			if _, ok, err := kept.AuthenticateRequest(request(cert, "alice")); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
