// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// TestRequestMatchesKey: a CSR matches the key it was made with, and
// nothing else.
func TestRequestMatchesKey(t *testing.T) {
	key, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	request, err := CertificateRequest(key, "clustergate:session:alice", []string{"viewer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name         string
		request, key []byte
		want         bool
	}{
		{"the key it was made with", request, key, true},
		{"another key", request, other, false},
		{"no request", nil, key, false},
		{"not a request", key, key, false},
		{"no key", request, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RequestMatchesKey(tt.request, tt.key); got != tt.want {
				t.Errorf("RequestMatchesKey = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNewPrivateKey: the key a credentials Secret holds is ECDSA P-256 in an
// "EC PRIVATE KEY" block, as before client-go made it, so that servers of
// either side of the change read each other's Secrets.
func TestNewPrivateKey(t *testing.T) {
	keyPEM, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(keyPEM)
	if block == nil || block.Type != "EC PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("key = %q, want one EC PRIVATE KEY block", keyPEM)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if key.Curve != elliptic.P256() {
		t.Errorf("curve = %s, want P-256", key.Curve.Params().Name)
	}
}

func TestParsePrivateKey(t *testing.T) {
	made, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pem  []byte
		// public is the key's public key; nil when it is refused.
		public crypto.PublicKey
	}{
		{name: "made by NewPrivateKey", pem: made, public: publicOf(t, made)},
		// What Secrets written before client-go made the keys hold.
		{name: "SEC 1 in EC PRIVATE KEY, as written before", pem: encode(t, "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(ecKey))), public: &ecKey.PublicKey},
		{name: "PKCS #8 ECDSA", pem: encode(t, "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(ecKey))), public: &ecKey.PublicKey},
		{name: "PKCS #1 RSA", pem: encode(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), public: &rsaKey.PublicKey},
		{name: "PKCS #8 X25519, which cannot sign", pem: encode(t, "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(x25519)))},
		{name: "a certificate", pem: encode(t, "CERTIFICATE", selfSigned(t, ecKey, 1))},
		{name: "not PEM", pem: []byte("key")},
		{name: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParsePrivateKey(tt.pem)
			if tt.public == nil {
				if err == nil {
					t.Fatalf("ParsePrivateKey = %T, want an error", key)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(tt.public) {
				t.Errorf("public key = %v, want %v", key.Public(), tt.public)
			}
		})
	}
}

func TestParseCertificate(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issued, signer := encode(t, "CERTIFICATE", selfSigned(t, key, 1)), encode(t, "CERTIFICATE", selfSigned(t, key, 2))
	tests := []struct {
		name string
		pem  []byte
		// serial is the serial number of the certificate read; zero when
		// none is.
		serial int64
	}{
		{name: "one certificate", pem: issued, serial: 1},
		{name: "a chain, the issued certificate first", pem: append(append([]byte{}, issued...), signer...), serial: 1},
		{name: "a key", pem: encode(t, "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(key)))},
		{name: "a certificate that does not parse", pem: encode(t, "CERTIFICATE", []byte("der"))},
		{name: "not PEM", pem: []byte("certificate")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, err := ParseCertificate(tt.pem)
			if tt.serial == 0 {
				if err == nil {
					t.Fatalf("ParseCertificate = serial %d, want an error", cert.SerialNumber)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cert.SerialNumber.Int64() != tt.serial {
				t.Errorf("serial = %d, want %d", cert.SerialNumber, tt.serial)
			}
		})
	}
}

// encode is der in a PEM block of the type given.
func encode(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// must is value, panicking on err: the tests' keys always marshal.
func must(value []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return value
}

// publicOf is the public key of a PEM private key of NewPrivateKey.
func publicOf(t *testing.T, keyPEM []byte) crypto.PublicKey {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &key.PublicKey
}

// selfSigned is the DER of a certificate of key with the serial number given.
func selfSigned(t *testing.T, key *ecdsa.PrivateKey, serial int64) []byte {
	t.Helper()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "clustergate:session:alice"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
