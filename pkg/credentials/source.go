// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotMinted means a session has no credentials yet.
var ErrNotMinted = fmt.Errorf("the session's credentials are not minted yet")

// Backend is how the proxy reaches a session's target.
type Backend struct {
	// URL is the target's kube-apiserver.
	URL *url.URL
	// Transport presents the session's client certificate and verifies the
	// target with its CA.
	Transport *http.Transport
}

// Source finds the backend of a session from its credentials Secret, from
// a cache of the server's namespace. Transports are reused while the Secret
// is unchanged, so connections to a target are kept alive across requests.
type Source struct {
	secrets  corelisters.SecretNamespaceLister
	mu       sync.Mutex
	backends map[types.UID]cachedBackend
	// forgotten holds sessions that are gone, and since when, so that a
	// call racing their end does not cache their backend again.
	forgotten map[types.UID]time.Time
}

// forgetFor is how long a gone session is remembered; a request that read
// it before it went is long over by then.
const forgetFor = 10 * time.Minute

type cachedBackend struct {
	resourceVersion string
	// kubeconfig is the digest of the kubeconfig the backend was built
	// from: a write that leaves it as it was (a renewal's new key added
	// next to it) keeps the backend and its connections.
	kubeconfig [sha256.Size]byte
	backend    Backend
}

// NewSource returns a source over a lister of the server's namespace.
func NewSource(secrets corelisters.SecretNamespaceLister) *Source {
	return &Source{secrets: secrets, backends: map[types.UID]cachedBackend{}, forgotten: map[types.UID]time.Time{}}
}

// Backend returns the backend of the session with the given UID.
func (s *Source) Backend(uid types.UID) (Backend, error) {
	secret, err := s.secrets.Get(SecretName(uid))
	if apierrors.IsNotFound(err) {
		return Backend{}, ErrNotMinted
	}
	if err != nil {
		return Backend{}, err
	}
	kubeconfig := secret.Data[KeyKubeconfig]
	if len(kubeconfig) == 0 {
		return Backend{}, ErrNotMinted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, gone := s.forgotten[uid]; gone {
		return Backend{}, ErrNotMinted
	}
	c, cached := s.backends[uid]
	if cached && c.resourceVersion == secret.ResourceVersion {
		return c.backend, nil
	}
	sum := sha256.Sum256(kubeconfig)
	if cached && c.kubeconfig == sum {
		c.resourceVersion = secret.ResourceVersion
		s.backends[uid] = c
		return c.backend, nil
	}
	b, err := newBackend(kubeconfig)
	if err != nil {
		return Backend{}, err
	}
	if cached {
		c.backend.Transport.CloseIdleConnections()
	}
	s.backends[uid] = cachedBackend{resourceVersion: secret.ResourceVersion, kubeconfig: sum, backend: b}
	return b, nil
}

// Forget drops the cached backend of an ended session and refuses the
// session from then on, though its Secret may linger in the cache.
func (s *Source) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.backends[uid]; ok {
		c.backend.Transport.CloseIdleConnections()
		delete(s.backends, uid)
	}
	now := time.Now()
	for old, at := range s.forgotten {
		if now.Sub(at) > forgetFor {
			delete(s.forgotten, old)
		}
	}
	s.forgotten[uid] = now
}

func newBackend(kubeconfig []byte) (Backend, error) {
	server, _, err := TargetCluster(kubeconfig)
	if err != nil {
		return Backend{}, err
	}
	u, err := url.Parse(server)
	if err != nil {
		return Backend{}, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return Backend{}, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return Backend{}, err
	}
	return Backend{URL: u, Transport: TargetTransport(tlsConfig)}, nil
}

// targetMaxFrameSize is the largest HTTP/2 frame the proxy accepts from a
// target. A frame is passed on only once it arrived whole, and with Go's
// default (1 MiB) a target writing a large response at once sends it in
// frames that size: the client's leg would wait for each of them, where
// smaller frames let both legs carry the response at the same time.
const targetMaxFrameSize = 256 << 10

// TargetTransport returns the transport with which the proxy reaches a
// target's kube-apiserver, verifying and presenting what tlsConfig holds.
func TargetTransport(tlsConfig *tls.Config) *http.Transport {
	// Keepalives reap half-open connections to the target.
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 100,
		ForceAttemptHTTP2:   true,
		HTTP2:               &http.HTTP2Config{MaxReadFrameSize: targetMaxFrameSize},
		// The target compresses a response only when the client asked for
		// it (its Accept-Encoding goes on unchanged), and the proxy relays
		// the bytes as they come. Asking on the client's behalf would make
		// the target compress and the proxy decompress what a direct client
		// would have been sent plain.
		DisableCompression: true,
	}
}
