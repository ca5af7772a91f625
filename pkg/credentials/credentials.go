// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package credentials holds the credentials the server mints for sessions:
// how they are made (keys, CSRs, kubeconfigs), where they are kept (a Secret
// per session in the server's namespace) and how the proxy reaches a
// target with them.
package credentials

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NewPrivateKey returns a new private key in PEM. It never leaves the
// server: only its CSR goes to the target.
func NewPrivateKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// CertificateRequest returns the PEM CSR of a client certificate for user
// cn in group.
func CertificateRequest(keyPEM []byte, cn, group string) ([]byte, error) {
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: []string{group}},
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
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

// ParseCertificate parses a PEM certificate.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the issued certificate is not PEM")
	}
	return x509.ParseCertificate(block.Bytes)
}

// ParsePrivateKey parses a PEM key made by NewPrivateKey.
func ParsePrivateKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("the session's private key is not PEM")
	}
	return x509.ParseECPrivateKey(block.Bytes)
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
	block, _ := pem.Decode(requestPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
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
