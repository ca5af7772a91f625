// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// testKubeconfig returns a kubeconfig whose CA is a real certificate.
func testKubeconfig(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := ClientKubeconfig("https://127.0.0.1:6443/base", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func TestSource(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	put := func(uid, rv string, data map[string][]byte) {
		_ = indexer.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "session-" + uid, Namespace: "cg", ResourceVersion: rv}, Data: data})
	}
	source := NewSource(corelisters.NewSecretLister(indexer).Secrets("cg"))
	kubeconfig := testKubeconfig(t)

	if _, err := source.Backend("none"); !errors.Is(err, ErrNotMinted) {
		t.Errorf("no Secret: %v, want ErrNotMinted", err)
	}
	put("pending", "1", map[string][]byte{KeyPrivateKey: []byte("key")})
	if _, err := source.Backend("pending"); !errors.Is(err, ErrNotMinted) {
		t.Errorf("key only: %v, want ErrNotMinted", err)
	}

	put("s1", "1", map[string][]byte{KeyKubeconfig: kubeconfig})
	first, err := source.Backend("s1")
	if err != nil {
		t.Fatal(err)
	}
	if first.URL.String() != "https://127.0.0.1:6443/base" || first.Transport.TLSClientConfig.RootCAs == nil {
		t.Errorf("backend %v, TLS roots set: %v", first.URL, first.Transport.TLSClientConfig.RootCAs != nil)
	}
	if again, _ := source.Backend("s1"); again.Transport != first.Transport {
		t.Error("the transport was not reused for an unchanged Secret")
	}
	// A renewal's key written next to the kubeconfig in use: same backend.
	put("s1", "2", map[string][]byte{KeyKubeconfig: kubeconfig, KeyPrivateKey: []byte("key")})
	if same, _ := source.Backend("s1"); same.Transport != first.Transport {
		t.Error("the transport was replaced though the kubeconfig is unchanged")
	}
	put("s1", "3", map[string][]byte{KeyKubeconfig: testKubeconfig(t)})
	if changed, _ := source.Backend("s1"); changed.Transport == first.Transport {
		t.Error("the transport was reused after the kubeconfig changed")
	}

	put("insecure", "1", map[string][]byte{KeyKubeconfig: []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)})
	if _, err := source.Backend("insecure"); err == nil {
		t.Error("a kubeconfig that skips TLS verification gave a backend")
	}

	// The session ended; its Secret is still in the cache.
	source.Forget("s1")
	if _, err := source.Backend("s1"); !errors.Is(err, ErrNotMinted) {
		t.Errorf("after Forget: %v, want ErrNotMinted", err)
	}
}
