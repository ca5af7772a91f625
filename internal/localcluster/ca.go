// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// validity of every certificate of a local control plane: it is rebuilt at
// each start.
const validity = 7 * 24 * time.Hour

// CA is a certificate authority of the local control plane.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertFile and KeyFile hold the CA in PEM.
	CertFile, KeyFile string
}

// KeyPair is a certificate and its key, written to files in PEM.
type KeyPair struct {
	CertFile, KeyFile string
}

// NewCA creates a CA and writes it to dir/name.{crt,key}. An RSA key is
// written as PKCS#1, which Gardener needs for a shoot's client CA.
func NewCA(dir, name string, rsaKey bool) (*CA, error) {
	key, err := newKey(rsaKey)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{cert: cert, key: key, CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	return ca, writePair(ca.CertFile, ca.KeyFile, der, key)
}

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Pool returns a certificate pool that trusts the CA, for clients of the
// servers it serves.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Issue signs a certificate for cn in organizations orgs, valid for the given
// DNS names and IPs, and writes it to dir/name.{crt,key}.
func (ca *CA) Issue(dir, name, cn string, orgs, dnsNames []string, ips []net.IP, usages ...x509.ExtKeyUsage) (KeyPair, error) {
	key, err := newKey(false)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, err
	}
	kp := KeyPair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	return kp, writePair(kp.CertFile, kp.KeyFile, der, key)
}

// SignRequest signs a client certificate for a PEM CSR's key and subject,
// valid from now until notAfter, as a CSR signer does, and returns it in
// PEM.
func (ca *CA) SignRequest(requestPEM []byte, notAfter time.Time) ([]byte, error) {
	block, _ := pem.Decode(requestPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("not a PEM certificate request")
	}
	request, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := request.CheckSignature(); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      request.Subject,
		NotBefore:    time.Now(),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca.cert, request.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// ServingCert issues a serving certificate for 127.0.0.1, localhost and the
// given DNS names.
func (ca *CA) ServingCert(dir, name string, dnsNames ...string) (KeyPair, error) {
	return ca.Issue(dir, name, name, nil, append([]string{"localhost"}, dnsNames...),
		[]net.IP{net.IPv4(127, 0, 0, 1)}, x509.ExtKeyUsageServerAuth)
}

// ClientCert issues a client certificate for user cn in groups orgs.
func (ca *CA) ClientCert(dir, name, cn string, orgs ...string) (KeyPair, error) {
	return ca.Issue(dir, name, cn, orgs, nil, nil, x509.ExtKeyUsageClientAuth)
}

func newKey(rsaKey bool) (crypto.Signer, error) {
	if rsaKey {
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writePair(certFile, keyFile string, der []byte, key crypto.Signer) error {
	var block *pem.Block
	switch k := key.(type) {
	case *rsa.PrivateKey:
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case *ecdsa.PrivateKey:
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return err
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	default:
		return fmt.Errorf("unsupported key type %T", key)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600)
}

// LoadCA reads a CA written by NewCA.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("no PEM data in %s or %s", certFile, keyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	var key crypto.Signer
	switch kb.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, CertFile: certFile, KeyFile: keyFile}, nil
}
