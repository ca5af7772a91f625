// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package frontproxy authenticates the requests the kube-apiserver in front
// forwards: the user it names in its request headers, once its client
// certificate proves it is the front proxy. It is the generic server's
// request-header authenticator with the certificate's verification kept
// for a while: the generic one verifies the chain, an ECDSA or RSA
// signature, on every request (65 µs with a P-256 CA in
// BenchmarkAuthenticateRequest, a fifth of a bare generic server's
// processor time for a small proxied GET), although every request of a
// connection presents the same certificate.
package frontproxy

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/utils/clock"
)

const (
	// maxAge bounds how long a verification is kept, also for a
	// certificate valid for years: a CA that is replaced is noticed at
	// once (its pool changes), this bounds anything else.
	maxAge = time.Minute
	// maxEntries bounds the certificates kept: a control plane has one
	// front proxy, or a few while its certificate is rotated; past the
	// bound the cache starts over rather than grow.
	maxEntries = 64
)

// Authenticator authenticates the front proxy's requests as the generic
// server's request-header authenticator does, with the same configuration,
// caching which client certificate chains verified against which CA pool.
type Authenticator struct {
	config  *authenticatorfactory.RequestHeaderConfig
	headers authenticator.Request
	clock   clock.PassiveClock
	// verify is (*x509.Certificate).Verify; tests count its calls.
	verify func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)

	mu       sync.Mutex
	verified map[[sha256.Size]byte]verification
}

// verification is a chain that verified: against which pools, until when.
type verification struct {
	roots, intermediates *x509.CertPool
	until                time.Time
}

// New returns the authenticator of the front proxy config describes.
func New(config *authenticatorfactory.RequestHeaderConfig, clock clock.PassiveClock) *Authenticator {
	return &Authenticator{
		config: config,
		headers: headerrequest.NewDynamic(config.UsernameHeaders, config.UIDHeaders, config.GroupHeaders,
			config.ExtraHeaderPrefixes),
		clock:    clock,
		verify:   (*x509.Certificate).Verify,
		verified: map[[sha256.Size]byte]verification{},
	}
}

// AuthenticateRequest authenticates the user a request's headers name when
// its client certificate chains to the front proxy's CA and carries one of
// the allowed common names; otherwise it does not authenticate it, with
// an error when a certificate was presented that does not verify.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.config.CAContentProvider.VerifyOptions()
	if !ok {
		return nil, false, nil
	}
	certs := req.TLS.PeerCertificates
	if err := a.verifyChain(certs, opts); err != nil {
		return nil, false, err
	}
	if allowed := a.config.AllowedClientNames.Value(); len(allowed) > 0 && !slices.Contains(allowed, certs[0].Subject.CommonName) {
		return nil, false, fmt.Errorf("x509: subject with cn=%s is not in the allowed list", certs[0].Subject.CommonName)
	}
	return a.headers.AuthenticateRequest(req)
}

// verifyChain verifies the presented chain against opts as the generic
// authenticator does, unless it verified against the same pools before
// and none of the chain's certificates has expired since.
func (a *Authenticator) verifyChain(certs []*x509.Certificate, opts x509.VerifyOptions) error {
	key := chainKey(certs)
	now := a.clock.Now()
	a.mu.Lock()
	v, hit := a.verified[key]
	a.mu.Unlock()
	if hit && v.roots == opts.Roots && v.intermediates == opts.Intermediates && now.Before(v.until) {
		return nil
	}
	given := opts.Intermediates
	if opts.Intermediates == nil && len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	opts.CurrentTime = now
	chains, err := a.verify(certs[0], opts)
	if err != nil {
		return err
	}
	// Until the first certificate of the chain expires: the chain no
	// longer verifies from then on.
	until := now.Add(maxAge)
	for _, c := range chains[0] {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) >= maxEntries {
		clear(a.verified)
	}
	a.verified[key] = verification{roots: opts.Roots, intermediates: given, until: until}
	return nil
}

// chainKey identifies a presented chain by the digest of its certificates.
func chainKey(certs []*x509.Certificate) [sha256.Size]byte {
	if len(certs) == 1 {
		// The front proxy's usual chain, without a hasher to allocate.
		return sha256.Sum256(certs[0].Raw)
	}
	h := sha256.New()
	for _, c := range certs {
		// The length first: two chains never hash alike by where one
		// certificate ends and the next begins.
		n := len(c.Raw)
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
