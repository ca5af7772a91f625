// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

func clusterSessionManifest(name, ttl, group string) string {
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata: {name: %s}
spec:
  ttl: %s
  accessLevel: {group: %s}
  target: {cluster: {kubeconfigSecretRef: {name: %s}}}
`, name, ttl, group, localcluster.ShootTargetSecret)
}

// waitSessionReady waits until the session's Ready condition is True.
func waitSessionReady(t *testing.T, client versioned.Interface, ns, name string) *v1alpha1.Session {
	t.Helper()
	var s *v1alpha1.Session
	eventually(t, time.Minute, "session "+ns+"/"+name+" Ready", func() error {
		var err error
		if s, err = client.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
			return fmt.Errorf("conditions %+v", s.Status.Conditions)
		}
		return nil
	})
	return s
}

// credentialsKubeconfig writes the session's minted kubeconfig, read as the
// garden admin from the server's namespace, to a file.
func credentialsKubeconfig(t *testing.T, s *v1alpha1.Session) string {
	t.Helper()
	kube, _ := clients(t)
	secret, err := kube.CoreV1().Secrets("clustergate-system").Get(context.Background(), credentials.SecretName(s.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(path, secret.Data[credentials.KeyKubeconfig], 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientCertificate is the client certificate of the session's minted
// credentials.
func clientCertificate(t *testing.T, s *v1alpha1.Session) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(credentialsKubeconfig(t, s))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
	if block == nil {
		t.Fatal("the minted kubeconfig has no client certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestShootSession(t *testing.T) {
	t.Parallel()
	_, client := clients(t)
	ns := namespace(t, "shoot-sessions")
	apply(t, cp.AdminKubeconfig, sessionManifest("look", ""), "-n", ns)
	s := waitSessionReady(t, client, ns, "look")
	if s.Status.BackendURL != cp.ShootURL {
		t.Errorf("backendURL = %q, want the shoot %s", s.Status.BackendURL, cp.ShootURL)
	}
	for _, c := range s.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s is %s: %s", c.Type, c.Reason, c.Message)
		}
	}
	if strings.Contains(kubectl(t, "-n", ns, "get", "session", "look", "-o", "yaml"), "client-key") {
		t.Error("the session object carries credentials")
	}

	creds := credentialsKubeconfig(t, s)
	kubectlAs(t, creds, "get", "configmaps", "-n", "kube-system")
	msg := kubectlErr(t, creds, "", "create", "configmap", "intruder", "-n", "default")
	if !strings.Contains(msg, "forbidden") {
		t.Errorf("a viewer session could write on the shoot: %s", msg)
	}
	if msg := kubectlErr(t, creds, "", "get", "secrets", "-n", "kube-system"); !strings.Contains(msg, "forbidden") {
		t.Errorf("a viewer session could read secrets: %s", msg)
	}

	t.Run("AuthorizationPolicy denies all but the owner", func(t *testing.T) {
		// The owner is a garden user, whom no data-plane issuer names: the
		// gateway lets nobody through to the session.
		out := kubectl(t, "-n", localcluster.PolicyNamespace, "get", "authorizationpolicies.security.istio.io", sessions.PolicyName(s),
			"-o", `jsonpath={.spec.action} {.spec.selector.matchLabels} {.spec.rules[*].to[0].operation.ports} {.spec.rules[*].to[0].operation.paths} {.spec.rules[*].when} {.metadata.labels.clustergate\.dev/session-name}`)
		want := `DENY {"istio":"clustergate-data-plane"} ["8444"] ["/sessions/shoot-sessions/look","/sessions/shoot-sessions/look/*"]  look`
		if out != want {
			t.Errorf("policy = %s\nwant     %s", out, want)
		}
	})
}

func TestClusterSession(t *testing.T) {
	t.Parallel()
	_, client := clients(t)
	ns := namespace(t, "cluster-sessions")
	// On the shoot, the session's group gets exactly the built-in view role.
	kubectlAs(t, cp.ShootKubeconfig, "create", "clusterrolebinding", "sessions-viewer", "--clusterrole=view", "--group=viewer")
	apply(t, cp.AdminKubeconfig, clusterSessionManifest("csr", "1h", "viewer"), "-n", ns)
	s := waitSessionReady(t, client, ns, "csr")

	issued := kubectlAs(t, cp.ShootKubeconfig, "get", "csr", credentials.CSRName(s.UID), "-o", `jsonpath={.spec.signerName} {.status.conditions[*].type}`)
	if issued != "kubernetes.io/kube-apiserver-client Approved" {
		t.Errorf("CSR on the shoot: %s", issued)
	}
	creds := credentialsKubeconfig(t, s)
	if cert := clientCertificate(t, s); cert.Subject.CommonName != "clustergate:session:admin" || strings.Join(cert.Subject.Organization, ",") != "viewer,clustergate:session-name:cluster-sessions/csr" {
		t.Errorf("certificate subject = %s", cert.Subject)
	}
	who := kubectlAs(t, creds, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if !strings.HasPrefix(who, `clustergate:session:admin ["viewer","clustergate:session-name:cluster-sessions/csr"`) {
		t.Errorf("identity on the shoot: %s", who)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "configmaps", "-n", "default"}, "yes"},
		{[]string{"get", "secrets", "-n", "default"}, "no"},
		{[]string{"create", "configmaps", "-n", "default"}, "no"},
	} {
		out, _ := cp.Kubectl(context.Background(), creds, nil, append([]string{"auth", "can-i"}, tt.args...)...)
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("can-i %v = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestSessionEndsAtExpiry(t *testing.T) {
	ctx := context.Background()
	kube, client := clients(t)
	ns := namespace(t, "short-sessions")
	apply(t, cp.AdminKubeconfig, clusterSessionManifest("brief", "20s", "viewer"), "-n", ns)
	s := waitSessionReady(t, client, ns, "brief")
	if got := s.Status.ExpiresAt.Sub(s.CreationTimestamp.Time); got != 20*time.Second {
		t.Fatalf("expiresAt - creationTimestamp = %s, want 20s", got)
	}
	policy := sessions.PolicyName(s)
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", localcluster.PolicyNamespace, "get", "authorizationpolicies.security.istio.io", policy); err != nil {
		t.Fatalf("no policy while the session lives: %v", err)
	}

	var goneAt time.Time
	eventually(t, time.Minute, "session deleted", func() error {
		_, err := client.ClustergateV1alpha1().Sessions(ns).Get(ctx, "brief", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			goneAt = time.Now()
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
	// creationTimestamp has second precision; allow for it and for polling.
	if late := goneAt.Sub(s.Status.ExpiresAt.Time); late < -time.Second || late > 2*time.Second {
		t.Errorf("session gone %s after expiresAt, want within ±2s", late)
	}
	if _, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("credentials Secret left behind: %v", err)
	}
	if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "get", "csr", credentials.CSRName(s.UID)); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("CSR left on the target: %v", err)
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", localcluster.PolicyNamespace, "get", "authorizationpolicies.security.istio.io", policy); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("policy left behind: %v", err)
	}
}

func TestSessionTargetProblems(t *testing.T) {
	t.Parallel()
	_, client := clients(t)
	ns := namespace(t, "broken-sessions")
	tests := []struct {
		name, manifest, reason string
	}{
		{name: "missing-shoot", reason: v1alpha1.SessionReasonTargetNotFound,
			manifest: strings.Replace(sessionManifest("missing-shoot", ""), "name: local", "name: no-such-shoot", 1)},
		{name: "missing-secret", reason: v1alpha1.SessionReasonTargetNotFound,
			manifest: strings.Replace(clusterSessionManifest("missing-secret", "1h", "viewer"), localcluster.ShootTargetSecret, "no-such-secret", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apply(t, cp.AdminKubeconfig, tt.manifest, "-n", ns)
			eventually(t, time.Minute, "reason "+tt.reason, func() error {
				s, err := client.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), tt.name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.reason {
					return fmt.Errorf("conditions %+v", s.Status.Conditions)
				}
				return nil
			})
		})
	}
}

func TestSessionBadInput(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "bad-sessions")
	base := sessionManifest("bad", "")
	tests := []struct {
		name, manifest, field string
	}{
		{"ttl 0", strings.Replace(base, "ttl: 1h", "ttl: 0s", 1), "spec.ttl"},
		{"ttl over the maximum", strings.Replace(base, "ttl: 1h", "ttl: 25h", 1), "spec.ttl"},
		{"no target", strings.Replace(base, "  target: {shoot: {name: local}}\n", "", 1), "spec.target"},
		{"two targets", strings.Replace(base, "target: {shoot: {name: local}}", "target: {shoot: {name: local}, cluster: {kubeconfigSecretRef: {name: x}}}", 1), "spec.target.cluster"},
		{"unknown group", strings.Replace(base, "group: viewer", "group: root", 1), "spec.accessLevel.group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := kubectlErr(t, cp.AdminKubeconfig, tt.manifest, "-n", ns, "create", "-f", "-")
			if !strings.Contains(msg, "is invalid") || !strings.Contains(msg, tt.field+":") {
				t.Errorf("error does not name %s: %s", tt.field, msg)
			}
		})
	}

	t.Run("bob cannot open a session owned by alice", func(t *testing.T) {
		kubectl(t, "-n", ns, "create", "rolebinding", "bob-sessions", "--clusterrole=clustergate:session-user", "--user=bob")
		msg := kubectlErr(t, userKubeconfig(t, "bob"), sessionManifest("for-alice", "alice"), "-n", ns, "create", "-f", "-")
		if !strings.Contains(msg, `may not open a session owned by "alice"`) {
			t.Errorf("got %s", msg)
		}
	})

	t.Run("spec is immutable", func(t *testing.T) {
		apply(t, cp.AdminKubeconfig, sessionManifest("fixed", ""), "-n", ns)
		msg := kubectlErr(t, cp.AdminKubeconfig, "", "-n", ns, "patch", "session", "fixed", "--type=merge", "-p", `{"spec":{"ttl":"2h"}}`)
		if !strings.Contains(msg, "spec: Invalid value") || !strings.Contains(msg, "immutable") {
			t.Errorf("got %s", msg)
		}
	})
}

func TestSessionExpiredWhileServerDownIsCleanedUp(t *testing.T) {
	ctx := context.Background()
	kube, client := clients(t)
	ns := namespace(t, "down-sessions")
	apply(t, cp.AdminKubeconfig, clusterSessionManifest("while-down", "10s", "viewer"), "-n", ns)
	s := waitSessionReady(t, client, ns, "while-down")
	if err := cp.StopComponent("clustergate"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(s.Status.ExpiresAt.Add(time.Second)))
	if err := cp.StartComponent(ctx, "clustergate"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "expired session and its credentials cleaned up after the restart", func() error {
		if _, err := client.ClustergateV1alpha1().Sessions(ns).Get(ctx, "while-down", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("session: %w", err)
		}
		if _, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("credentials: %w", err)
		}
		if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "get", "csr", credentials.CSRName(s.UID)); err == nil {
			return fmt.Errorf("CSR still on the target")
		}
		return nil
	})
}
