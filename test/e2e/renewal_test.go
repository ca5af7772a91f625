// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// shortLivedSigner is a signer name the shoot's kube-controller-manager
// does not serve: runShortLivedSigner stands in for it.
const shortLivedSigner = "clustergate.dev/e2e-short-lived"

// runShortLivedSigner signs, until the test ends, every approved CSR of
// shortLivedSigner on the shoot with the shoot's client CA, for lifetime
// only: a signer that caps its certificates, as an administrator may
// configure one.
func runShortLivedSigner(t *testing.T, lifetime time.Duration) {
	t.Helper()
	shoot, err := kubernetes.NewForConfig(restConfig(t, cp.ShootKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := signApproved(ctx, shoot, cp.ShootClientCA(), lifetime); err != nil && ctx.Err() == nil {
				t.Logf("short-lived signer: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
}

// signApproved issues the certificate of every approved, unsigned CSR of
// shortLivedSigner.
func signApproved(ctx context.Context, shoot kubernetes.Interface, ca *localcluster.CA, lifetime time.Duration) error {
	csrs, err := shoot.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", shortLivedSigner).String()})
	if err != nil {
		return err
	}
	for i := range csrs.Items {
		csr := &csrs.Items[i]
		approved := false
		for _, c := range csr.Status.Conditions {
			approved = approved || c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue
		}
		if !approved || len(csr.Status.Certificate) > 0 {
			continue
		}
		if csr.Status.Certificate, err = ca.SignRequest(csr.Spec.Request, time.Now().Add(lifetime)); err != nil {
			return err
		}
		if _, err := shoot.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// TestClusterCertificateRenewal: a cluster target's signer issues
// certificates shorter than the session after its extension. The server
// renews the certificate for a new key through a new CSR before it expires,
// the session stays Ready, and its owner's requests through the proxy still
// reach the target after the first certificate expired.
func TestClusterCertificateRenewal(t *testing.T) {
	t.Parallel()
	const lifetime = 70 * time.Second
	runShortLivedSigner(t, lifetime)
	_, client := clients(t)
	ns := namespace(t, "renewal")
	manifest := strings.Replace(clusterSessionManifest("renew", "30s", "viewer"), "kubeconfigSecretRef:",
		"signerName: "+shortLivedSigner+", kubeconfigSecretRef:", 1)
	apply(t, cp.AdminKubeconfig, manifest, "-n", ns)
	s := waitSessionReady(t, client, ns, "renew")
	first := clientCertificate(t, s)
	if !first.NotAfter.After(s.Status.ExpiresAt.Time) {
		t.Fatalf("the first certificate ends at %s, before the session (%s): the test needs one that outlasts it", first.NotAfter, s.Status.ExpiresAt)
	}
	session := sessionKubeconfig(t, cp.AdminKubeconfig, ns, "renew")

	// The extension outlasts the certificate: renewed at half its lifetime.
	if _, err := extendTo(client, ns, s.Name, s.Status.ExpiresAt.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var renewed *x509.Certificate
	eventually(t, lifetime, "a renewed certificate in the session's credentials", func() error {
		if renewed = clientCertificate(t, s); renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still the first certificate, valid until %s", first.NotAfter)
		}
		return nil
	})
	if renewed.Subject.CommonName != first.Subject.CommonName || strings.Join(renewed.Subject.Organization, ",") != "viewer,"+v1alpha1.SessionGroupPrefix+ns+"/renew" {
		t.Errorf("renewed for %s, want the session's identity %s", renewed.Subject, first.Subject)
	}
	if pub, ok := renewed.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || pub.Equal(first.PublicKey) {
		t.Error("the renewed certificate is for the first certificate's key, want a new key")
	}
	if !renewed.NotAfter.After(first.NotAfter) {
		t.Errorf("the renewed certificate ends at %s, not after the first (%s)", renewed.NotAfter, first.NotAfter)
	}
	if csrs := kubectlAs(t, cp.ShootKubeconfig, "get", "csr", credentials.CSRName(s.UID), "-o", "jsonpath={.status.conditions[*].type}"); csrs != "Approved" {
		t.Errorf("the session's CSR on the shoot: conditions %q, want Approved", csrs)
	}
	eventually(t, 10*time.Second, "an event of the renewal", func() error {
		events := kubectl(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.name=renew,reason="+v1alpha1.SessionReasonMinted,
			"-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "Client certificate renewed by "+shortLivedSigner) {
			return fmt.Errorf("events of the session: %s", events)
		}
		return nil
	})

	// After the first certificate expired, the owner still reaches the
	// target: the proxy uses the renewed one.
	time.Sleep(time.Until(first.NotAfter.Add(2 * time.Second)))
	s = waitSessionReady(t, client, ns, "renew")
	who := kubectlAs(t, session, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if who != first.Subject.CommonName {
		t.Errorf("the target sees %q through the session after the first certificate expired, want %q", who, first.Subject.CommonName)
	}
}
