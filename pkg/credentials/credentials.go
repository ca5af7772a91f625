// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package credentials holds the credentials the server mints for sessions:
// how they are made (keys, CSRs, kubeconfigs), where they are kept (a Secret
// per session in the server's namespace) and how the proxy reaches a
// target with them.
package credentials

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// NewPrivateKey returns a new private key in PEM: ECDSA P-256, in an "EC
// PRIVATE KEY" block. It never leaves the server: only its CSR goes to the
// target.
func NewPrivateKey() ([]byte, error) {
	return keyutil.MakeEllipticPrivateKeyPEM()
}

// CertificateRequest returns the PEM CSR of a client certificate for user
// cn in groups.
func CertificateRequest(keyPEM []byte, cn string, groups []string) ([]byte, error) {
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, err
	}
	return certutil.MakeCSR(key, &pkix.Name{CommonName: cn, Organization: groups}, nil, nil)
}

// ClientKubeconfig builds the kubeconfig the server uses for a session on a
// cluster target: the target's server and CA with the session's certificate.
func ClientKubeconfig(server string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["target"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["session"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["session"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "session"}
	cfg.CurrentContext = "session"
	return clientcmd.Write(*cfg)
}

// TargetCluster returns the server and CA of a kubeconfig's current
// context, refusing one that does not verify the target with TLS.
func TargetCluster(kubeconfig []byte) (server string, caPEM []byte, err error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", nil, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", nil, errors.New("the kubeconfig has no current context")
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return "", nil, fmt.Errorf("the kubeconfig has no cluster %q", ctx.Cluster)
	}
	if cluster.InsecureSkipTLSVerify {
		return "", nil, errors.New("the kubeconfig skips TLS verification of the target")
	}
	if u, err := url.Parse(cluster.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		return "", nil, fmt.Errorf("the kubeconfig's server %q is not an https URL", cluster.Server)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return "", nil, errors.New("the kubeconfig carries no CA for the target")
	}
	return cluster.Server, cluster.CertificateAuthorityData, nil
}

// ParseCertificate parses a PEM certificate, the first of a chain: the one
// issued, ahead of the signer's.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the issued certificate: %w", err)
	}
	return certs[0], nil
}

// ParsePrivateKey parses a PEM key made by NewPrivateKey, or an RSA or
// PKCS #8 one.
func ParsePrivateKey(keyPEM []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the session's private key: %w", err)
	}
	// A PKCS #8 block may hold a key that only agrees keys (X25519).
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the session's private key, a %T, cannot sign", key)
	}
	return signer, nil
}

// Validity is when the client certificate of a kubeconfig's current user
// becomes valid and expires, or zeros when it has none that can be read (a
// token, say).
func Validity(kubeconfig []byte) (notBefore, notAfter time.Time) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return time.Time{}, time.Time{}
	}
	c := cfg.Contexts[cfg.CurrentContext]
	if c == nil || cfg.AuthInfos[c.AuthInfo] == nil {
		return time.Time{}, time.Time{}
	}
	cert, err := ParseCertificate(cfg.AuthInfos[c.AuthInfo].ClientCertificateData)
	if err != nil {
		return time.Time{}, time.Time{}
	}
	return cert.NotBefore, cert.NotAfter
}

// RequestMatchesKey tells whether a PEM CSR asks for a certificate of the
// PEM private key's public key: a CSR made for an earlier key (the one of
// the certificate being renewed, or of a Secret since replaced) does not.
func RequestMatchesKey(requestPEM, keyPEM []byte) bool {
	// client-go makes CSRs (certutil.MakeCSR) but exports no parser of one.
	block, _ := pem.Decode(requestPEM)
	if block == nil || block.Type != certutil.CertificateRequestBlockType {
		return false
	}
	request, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return false
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return false
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(request.PublicKey)
}
