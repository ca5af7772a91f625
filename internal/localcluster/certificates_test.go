// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseCert reads the certificate of a key pair written by a CA.
func parseCert(t *testing.T, kp KeyPair) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(kp.CertFile, kp.KeyFile)
	if err != nil {
		t.Fatalf("%s: %v", kp.CertFile, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestIssueCertificates(t *testing.T) {
	dir := t.TempDir()
	c, err := issueCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		ca         *CA
		kp         KeyPair
		usage      x509.ExtKeyUsage
		dnsName    string
		wantUser   string
		wantGroups []string
	}{
		{name: "garden serving", ca: c.gardenCA, kp: c.gardenServing, usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc"},
		{name: "shoot serving", ca: c.shootCA, kp: c.shootServing, usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc"},
		{name: "node serving", ca: c.nodeCA, kp: c.nodeServing, usage: x509.ExtKeyUsageServerAuth, dnsName: "localhost"},
		{name: "gardener-apiserver serving", ca: c.aggregatedCA, kp: c.gardenerServing, usage: x509.ExtKeyUsageServerAuth, dnsName: "gardener-apiserver.kube-system.svc"},
		{name: "clustergate serving", ca: c.aggregatedCA, kp: c.clustergateServing, usage: x509.ExtKeyUsageServerAuth, dnsName: "clustergate.clustergate-system.svc"},
		{name: "garden admin", ca: c.clientCA, kp: c.gardenAdmin, usage: x509.ExtKeyUsageClientAuth, wantUser: "admin", wantGroups: []string{"system:masters"}},
		{name: "clustergate's identity", ca: c.clientCA, kp: c.clustergateUser, usage: x509.ExtKeyUsageClientAuth,
			wantUser: ClustergateServiceAccount, wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:clustergate-system"}},
		{name: "front proxy", ca: c.frontProxyCA, kp: c.frontProxyClient, usage: x509.ExtKeyUsageClientAuth, wantUser: "front-proxy-client"},
		{name: "shoot admin", ca: c.shootClientCA, kp: c.shootAdmin, usage: x509.ExtKeyUsageClientAuth, wantUser: "admin", wantGroups: []string{"system:masters"}},
		{name: "kubelet client", ca: c.shootClientCA, kp: c.kubeletClient, usage: x509.ExtKeyUsageClientAuth, wantUser: "kube-apiserver-kubelet-client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := parseCert(t, tt.kp)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: tt.ca.Pool(), DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Fatal(err)
			}
			if tt.usage == x509.ExtKeyUsageServerAuth {
				if err := cert.VerifyHostname("127.0.0.1"); err != nil {
					t.Error(err)
				}
				return
			}
			if cert.Subject.CommonName != tt.wantUser {
				t.Errorf("user %q, want %q", cert.Subject.CommonName, tt.wantUser)
			}
			if diff := cmp.Diff(tt.wantGroups, cert.Subject.Organization); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
	// Gardener reads the shoot's client CA key as RSA in PKCS#1.
	key, err := os.ReadFile(c.shootClientCA.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(key); block == nil || block.Type != "RSA PRIVATE KEY" {
		t.Errorf("the shoot's client CA key is not PKCS#1 RSA")
	}
}

// TestLoadCA: a CA read back from its files, as hack/local-user reads the
// garden client CA of a running control plane, issues certificates that
// verify against the original.
func TestLoadCA(t *testing.T) {
	for _, rsaKey := range []bool{false, true} {
		dir := t.TempDir()
		ca, err := NewCA(dir, "ca", rsaKey)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadCA(ca.CertFile, ca.KeyFile)
		if err != nil {
			t.Fatalf("rsa=%v: %v", rsaKey, err)
		}
		kp, err := loaded.ClientCert(dir, "user", "alice", "sre")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseCert(t, kp).Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("rsa=%v: %v", rsaKey, err)
		}
	}
	if _, err := LoadCA(filepath.Join(t.TempDir(), "none.crt"), filepath.Join(t.TempDir(), "none.key")); err == nil {
		t.Error("LoadCA of missing files succeeded")
	}
}
