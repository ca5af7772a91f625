package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
)

// Config configures the data plane's listener.
type Config struct {
	// Address is host:port to listen on; empty turns the data plane off.
	Address string
	// AuthenticationConfigFile is the AuthenticationConfiguration of the
	// JWT issuers whose tokens are accepted.
	AuthenticationConfigFile string
	// TLSCertFile and TLSKeyFile are the listener's certificate and key;
	// empty, it presents the server's serving certificate.
	TLSCertFile, TLSKeyFile string
}

// ReadyPath answers 200 once every issuer's keys are loaded, without
// authentication, for load balancers and gateways in front.
const ReadyPath = "/readyz"

// Listen binds cfg.Address and serves the data plane there with TLS until
// ctx ends; it returns once the listener is bound, with its address.
func Listen(ctx context.Context, cfg Config, cert dynamiccertificates.CertKeyContentProvider, auth *Authenticator, sessions Opener) (net.Addr, error) {
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// HTTP/2 for requests; upgrades (exec, port-forward) negotiate
		// HTTP/1.1, as kubectl does.
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: certificateFrom(cert),
		// No client certificate is asked for: only the bearer JWT counts.
		ClientAuth: tls.NoClientCert,
	}
	mux := http.NewServeMux()
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		if err := auth.HealthCheck(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle(PathPrefix, Handler(auth, sessions))
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, TLSConfig: tlsConfig, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		if err := srv.Serve(tls.NewListener(l, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Data plane stopped serving")
		}
	}()
	go func() {
		<-ctx.Done()
		// Streams end with their sessions; at shutdown they end here.
		_ = srv.Close()
	}()
	klog.InfoS("Serving the data plane", "address", l.Addr().String())
	return l.Addr(), nil
}

// certificateFrom presents the provider's current certificate, parsed once
// per change.
func certificateFrom(provider dynamiccertificates.CertKeyContentProvider) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var (
		mu                sync.Mutex
		lastCert, lastKey []byte
		parsed            *tls.Certificate
	)
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, key := provider.CurrentCertKeyContent()
		mu.Lock()
		defer mu.Unlock()
		if parsed == nil || !bytes.Equal(cert, lastCert) || !bytes.Equal(key, lastKey) {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, err
			}
			parsed, lastCert, lastKey = &pair, cert, key
		}
		return parsed, nil
	}
}
