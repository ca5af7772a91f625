// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// auditEvent is what the shoot's audit log holds of a request, at level
// Metadata.
type auditEvent struct {
	RequestURI string   `json:"requestURI"`
	SourceIPs  []string `json:"sourceIPs"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// shootAuditEvent waits for the shoot's audit event of the request whose
// line holds marker, and returns it.
func shootAuditEvent(t *testing.T, marker string) auditEvent {
	t.Helper()
	var event auditEvent
	eventually(t, 10*time.Second, marker+" in the shoot's audit log", func() error {
		log, err := os.ReadFile(cp.ShootAuditLog)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, marker) {
				return json.Unmarshal([]byte(line), &event)
			}
		}
		return fmt.Errorf("not there")
	})
	return event
}

// TestShootAuditNamesTheOwner: the requests of a shoot session, viewer or
// admin, through the aggregated proxy or the data plane, reach the Shoot as
// the owner's session identity, in Gardener's group of the access level and
// in the session's own group, and the Shoot's audit log names both. A viewer
// session reads what Gardener's viewers read, and still cannot write, nor
// read Secrets (the Shoot answers 403). A
// deleted session leaves no CSR on the Shoot, and its certificate, whose key
// went with the session, ends when the session would have.
func TestShootAuditNamesTheOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube, client := clients(t)
	ns := namespace(t, "shoot-identity")
	grant(t, ns, "alice", "clustergate:session-user", "clustergate:target-viewer", "clustergate:target-admin")
	alice := userKubeconfig(t, "alice")
	kubectl(t, "-n", ns, "create", "serviceaccount", "sre")
	sre := localcluster.DataPlaneUserPrefix + "system:serviceaccount:" + ns + ":sre"
	for _, level := range []string{"viewer", "admin"} {
		kubectl(t, "-n", ns, "create", "rolebinding", "sre-target-"+level, "--clusterrole=clustergate:target-"+level, "--user="+sre)
	}

	tests := []struct {
		session, level, owner string
		dataPlane             bool
		group                 string
	}{
		{session: "proxy-viewer", level: "viewer", owner: "alice", group: "gardener.cloud:project:viewers"},
		{session: "proxy-admin", level: "admin", owner: "alice", group: "gardener.cloud:project:admins"},
		{session: "data-plane-viewer", level: "viewer", owner: sre, dataPlane: true, group: "gardener.cloud:project:viewers"},
		{session: "data-plane-admin", level: "admin", owner: sre, dataPlane: true, group: "gardener.cloud:project:admins"},
	}
	for _, tt := range tests {
		owner, creator := "", alice
		if tt.dataPlane {
			// Assigned by an admin: the SRE has no identity on the garden.
			owner, creator = tt.owner, cp.AdminKubeconfig
		}
		apply(t, creator, strings.Replace(sessionManifest(tt.session, owner), "group: viewer", "group: "+tt.level, 1), "-n", ns)
	}
	aliceHTTP, err := rest.HTTPClientFor(restConfig(t, alice))
	if err != nil {
		t.Fatal(err)
	}
	sreToken := token(t, ns, "sre", localcluster.DataPlaneAudience)

	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			s := waitSessionReady(t, client, ns, tt.session)
			if ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); ready != nil {
				t.Logf("Ready %s after creation (second precision): key, CSR on the Shoot, approval, signature",
					ready.LastTransitionTime.Sub(s.CreationTimestamp.Time))
			}
			// do sends a request through the session's way in.
			do := func(method, path, body string) (int, string) {
				if tt.dataPlane {
					return dataPlaneDo(t, method, "/sessions/"+ns+"/"+tt.session+path, sreToken, body)
				}
				req, _ := http.NewRequest(method, restConfig(t, alice).Host+s.Status.Endpoint+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := aliceHTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				answer, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(answer)
			}
			user := v1alpha1.SessionUserPrefix + tt.owner
			sessionGroup := v1alpha1.SessionGroupPrefix + ns + "/" + tt.session

			probe := fmt.Sprintf("probe-%s-%d", tt.session, time.Now().UnixNano())
			if code, body := do(http.MethodGet, "/api/v1/namespaces/default/configmaps/"+probe, ""); code != http.StatusNotFound {
				t.Fatalf("GET through the session: %d %s, want the Shoot's 404", code, body)
			}
			event := shootAuditEvent(t, probe)
			t.Logf("the Shoot's audit: user %s, groups %v", event.User.Username, event.User.Groups)
			if event.User.Username != user || !slices.Contains(event.User.Groups, tt.group) || !slices.Contains(event.User.Groups, sessionGroup) {
				t.Errorf("the Shoot's audit names user %q in groups %v, want %q in %s and %s", event.User.Username, event.User.Groups, user, tt.group, sessionGroup)
			}
			if event.ImpersonatedUser != nil || slices.ContainsFunc(event.User.Groups, func(g string) bool { return strings.HasPrefix(g, "system:masters") }) {
				t.Errorf("the Shoot saw impersonation or a masters group: %+v", event)
			}

			write := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-write"}}`, probe)
			code, body := do(http.MethodPost, "/api/v1/namespaces/default/configmaps", write)
			// default's: kube-system's are the shipped deny rule's.
			secretsCode, secretsBody := do(http.MethodGet, "/api/v1/namespaces/default/secrets", "")
			// Gardener's read-only role reads every resource but Secrets:
			// nodes too, which the built-in view role leaves out.
			if code, body := do(http.MethodGet, "/api/v1/nodes", ""); code != http.StatusOK {
				t.Errorf("a %s's read of nodes: %d %s", tt.level, code, body)
			}
			if tt.level == "viewer" {
				if code != http.StatusForbidden || !strings.Contains(body, `User \"`+user+`\" cannot create resource \"configmaps\"`) {
					t.Errorf("a viewer's write: %d %s, want the Shoot's 403 naming the owner", code, body)
				}
				if secretsCode != http.StatusForbidden {
					t.Errorf("a viewer's read of Secrets: %d %s, want the Shoot's 403", secretsCode, secretsBody)
				}
				return
			}
			if code != http.StatusCreated {
				t.Errorf("an admin's write: %d %s", code, body)
			}
			if secretsCode != http.StatusOK {
				t.Errorf("an admin's read of Secrets: %d %s", secretsCode, secretsBody)
			}
			kubectlAs(t, cp.ShootKubeconfig, "-n", "default", "delete", "configmap", probe+"-write", "--ignore-not-found")
		})
	}

	t.Run("a deleted session leaves no CSR on the Shoot", func(t *testing.T) {
		s := waitSessionReady(t, client, ns, "proxy-admin")
		csr := credentials.CSRName(s.UID)
		encoded := kubectlAs(t, cp.ShootKubeconfig, "get", "csr", csr, "-o", "jsonpath={.status.certificate}")
		pemBytes, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := credentials.ParseCertificate(pemBytes)
		if err != nil {
			t.Fatal(err)
		}
		// The signer starts the certificate's time when it signs, a moment
		// after the session's remaining time was asked for.
		if late := cert.NotAfter.Sub(s.Status.ExpiresAt.Time); late < -time.Minute || late > time.Minute {
			t.Errorf("the certificate ends at %s, the session at %s", cert.NotAfter, s.Status.ExpiresAt)
		}
		kubectlAs(t, alice, "-n", ns, "delete", "session", s.Name, "--wait", "--timeout=30s")
		if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "get", "csr", csr); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("CSR left on the Shoot: %v", err)
		}
		if _, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the session's key and certificate left behind: %v", err)
		}
	})
}
