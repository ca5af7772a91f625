// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"net"
	"net/http"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Config configures the data plane's listener.
type Config struct {
	// Address is host:port to listen on; empty turns the data plane off.
	Address string
	// AuthenticationConfigFile is the AuthenticationConfiguration of the
	// JWT issuers whose tokens are accepted.
	AuthenticationConfigFile string
	// SharedGardenIdentities says that the issuers are the garden's own, so
	// that their names need no prefix of their own (checkIdentitySpace).
	SharedGardenIdentities bool
	// TLSCertFile and TLSKeyFile are the listener's certificate and key;
	// empty, it presents the server's serving certificate.
	TLSCertFile, TLSKeyFile string
}

// ReadyPath answers 200 once every issuer's keys are loaded, without
// authentication, for load balancers and gateways in front.
const ReadyPath = "/readyz"

// shutdownTimeout bounds how long requests may take to finish at shutdown;
// watches and streams are ended at once (see Handler).
const shutdownTimeout = 5 * time.Second

// Listen binds cfg.Address and serves the data plane there until ctx ends,
// with the generic server's secure serving: the TLS settings of serving
// (--tls-min-version, --tls-cipher-suites, HTTP/2 limits), its header and
// idle timeouts, and cert, reloaded when it changes. No client certificate
// is asked for: only the bearer JWT counts. It returns once the listener is
// bound, with its address.
func Listen(ctx context.Context, cfg Config, serving *genericapiserver.SecureServingInfo, cert dynamiccertificates.CertKeyContentProvider, auth *Authenticator, sessions Opener) (net.Addr, error) {
	mux := http.NewServeMux()
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		// Unauthenticated: which issuer fails, and why, stays in the log.
		if err := auth.HealthCheck(); err != nil {
			klog.V(2).InfoS("Data plane not ready", "err", err)
			http.Error(w, "not ready: the JWT issuers' keys are not loaded", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle(v1alpha1.DataPlanePathPrefix, Handler(ctx, auth, sessions))
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, err
	}
	info := &genericapiserver.SecureServingInfo{Listener: l, Cert: cert}
	if serving != nil {
		info.MinTLSVersion, info.CipherSuites, info.CurvePreferences = serving.MinTLSVersion, serving.CipherSuites, serving.CurvePreferences
		info.HTTP2MaxStreamsPerConnection, info.DisableHTTP2 = serving.HTTP2MaxStreamsPerConnection, serving.DisableHTTP2
	}
	if _, _, err := info.Serve(mux, shutdownTimeout, ctx.Done()); err != nil {
		_ = l.Close()
		return nil, err
	}
	klog.InfoS("Serving the data plane", "address", l.Addr().String())
	return l.Addr(), nil
}
