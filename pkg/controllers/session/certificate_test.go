// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/clustergate/clustergate/pkg/credentials"
)

func TestCertificateRequestCarriesOwnerAndGroup(t *testing.T) {
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := credentials.CertificateRequest(key, CommonName(session()), "viewer")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(der)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "clustergate:session:alice" || len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "viewer" {
		t.Errorf("subject = %v", req.Subject)
	}
}

func TestTargetClusterRefusesInsecureKubeconfigs(t *testing.T) {
	for name, cluster := range map[string]string{
		"skips TLS verification": `{server: "https://10.0.0.1", insecure-skip-tls-verify: true}`,
		"plain HTTP":             `{server: "http://10.0.0.1", certificate-authority-data: Zm9v}`,
		"no CA":                  `{server: "https://10.0.0.1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: ` + cluster + `}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
			if _, _, err := credentials.TargetCluster([]byte(kubeconfig)); err == nil {
				t.Error("accepted")
			}
		})
	}
	if server, ca, err := credentials.TargetCluster([]byte(shootKubeconfig)); err != nil || server != "https://127.0.0.1:6443" || string(ca) != "foo" {
		t.Errorf("TargetCluster = %q, %q, %v", server, ca, err)
	}
}
