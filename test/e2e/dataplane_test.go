// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
)

// dataPlaneGet sends GET path to the data plane with token (none when
// empty) and returns the status code and body.
func dataPlaneGet(t *testing.T, path, token string) (int, string) {
	t.Helper()
	return dataPlaneDo(t, http.MethodGet, path, token, "")
}

// dataPlaneDo sends a request with a JSON body (none when empty) to the
// data plane with token (none when empty) and returns the status code and
// body.
func dataPlaneDo(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	ca, err := os.ReadFile(cp.DataPlaneCAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	req, _ := http.NewRequest(method, cp.DataPlaneURL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// token mints a token of the garden's service-account issuer, the data
// plane's, for a service account of ns.
func token(t *testing.T, ns, serviceAccount, audience string) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, "-n", ns, "create", "token", serviceAccount, "--audience", audience))
}

// TestDataPlane: an SRE whose only identity is a service account without
// any RBAC on the garden but the target grant reaches the session an admin
// assigned to it through the data plane, with a kubeconfig from
// sessions/kubeconfig that carries no credential: only an exec plugin that
// fetches a token of the garden's service-account issuer, a real OIDC
// issuer with discovery and keys served by kube-apiserver.
func TestDataPlane(t *testing.T) {
	ctx := context.Background()
	_, client := clients(t)
	ns := namespace(t, "data-plane")
	kubectl(t, "-n", ns, "create", "serviceaccount", "sre")
	kubectl(t, "-n", ns, "create", "serviceaccount", "intruder")
	// The data plane's name of the service account: its tokens never name
	// a garden user.
	garden := "system:serviceaccount:" + ns + ":sre"
	owner := localcluster.DataPlaneUserPrefix + garden
	// TargetAccess asks whether the owner holds the access level.
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-target-admin", "--clusterrole=clustergate:target-admin", "--user="+owner)
	manifest := strings.Replace(sessionManifest("sre-work", owner), "group: viewer", "group: admin", 1)
	apply(t, cp.AdminKubeconfig, manifest, "-n", ns)
	s := waitSessionReady(t, client, ns, "sre-work")
	// A session of the garden's service account, whose name a data-plane
	// token with the same subject does not carry.
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-garden-target-viewer", "--clusterrole=clustergate:target-viewer", "--serviceaccount="+ns+":sre")
	apply(t, cp.AdminKubeconfig, sessionManifest("garden-work", garden), "-n", ns)
	waitSessionReady(t, client, ns, "garden-work")

	// A replica that points session kubeconfigs at the data plane, with the
	// exec plugin users run (kubelogin's stand-in).
	replica, err := cp.StartReplica(ctx, "clustergate-data-plane",
		"--data-plane-external-url="+cp.DataPlaneURL, "--data-plane-ca-file="+cp.DataPlaneCAFile,
		"--kubeconfig-exec-command="+cp.TokenExecPlugin, "--kubeconfig-exec-arg="+cp.AdminKubeconfig,
		"--kubeconfig-exec-arg="+ns, "--kubeconfig-exec-arg=sre", "--kubeconfig-exec-arg="+localcluster.DataPlaneAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.StopComponent(replica.Name) })

	transport, err := rest.TransportFor(cp.FrontProxyConfig(replica.URL, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: transport}).Get(replica.URL + "/apis/clustergate.dev/v1alpha1/namespaces/" + ns + "/sessions/sre-work/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Kubeconfig []byte }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sre := filepath.Join(t.TempDir(), "sre.kubeconfig")
	if err := os.WriteFile(sre, answer.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("the kubeconfig points at the data plane and carries no credential", func(t *testing.T) {
		kc, err := clientcmd.Load(answer.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx := kc.Contexts[kc.CurrentContext]
		if server := kc.Clusters[ctx.Cluster].Server; server != cp.DataPlaneURL+"/sessions/"+ns+"/sre-work" {
			t.Errorf("server = %s", server)
		}
		u := kc.AuthInfos[ctx.AuthInfo]
		if u.Token != "" || len(u.ClientKeyData) > 0 || u.Exec == nil || u.Exec.Command != cp.TokenExecPlugin {
			t.Errorf("user = %+v, want only the exec plugin", u)
		}
	})
	t.Run("kubectl get, watch and exec as the owner", func(t *testing.T) {
		if out := kubectlAs(t, sre, "get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/kube-system") {
			t.Errorf("namespaces through the data plane: %s", out)
		}
		if who := kubectlAs(t, sre, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); who != v1alpha1.SessionUserPrefix+owner {
			t.Errorf("the target sees %q, want the owner's session identity", who)
		}
		standInPod(t, "data-plane")
		if out := kubectlAs(t, sre, "-n", "default", "exec", "data-plane", "--", "echo", "through", "the", "data", "plane"); out != "through the data plane\n" {
			t.Errorf("exec printed %q", out)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		path := "/sessions/" + ns + "/sre-work/api"
		good := token(t, ns, "sre", localcluster.DataPlaneAudience)
		tampered := good[:len(good)-4] + "AAAA"
		for _, tt := range []struct {
			name, path, token, want string
			code                    int
		}{
			{name: "no token", code: http.StatusUnauthorized, want: `"reason":"Unauthorized"`},
			{name: "bad signature", token: tampered, code: http.StatusUnauthorized, want: `"reason":"Unauthorized"`},
			{name: "wrong audience", token: token(t, ns, "sre", "kubernetes"), code: http.StatusUnauthorized, want: `"reason":"Unauthorized"`},
			{name: "someone else's valid token", token: token(t, ns, "intruder", localcluster.DataPlaneAudience), code: http.StatusForbidden,
				want: "only the session's owner may use its proxy"},
			{name: "the owner", token: good, code: http.StatusOK, want: `"kind":"APIVersions"`},
			{name: "the owner, the session's path without a slash: the target's root", path: "/sessions/" + ns + "/sre-work", token: good, code: http.StatusOK, want: `"/apis"`},
			{name: "an escaped slash in the session's name", path: "/sessions/" + ns + "/sre-work%2Fapi", token: good, code: http.StatusBadRequest,
				want: `"reason":"BadRequest"`},
			// Before data-plane names had a prefix of their own, this token
			// owned the garden service account's session.
			{name: "the garden identity's session, with a data-plane token of the same subject", path: "/sessions/" + ns + "/garden-work/api",
				token: good, code: http.StatusForbidden, want: "only the session's owner may use its proxy"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := path
				if tt.path != "" {
					p = tt.path
				}
				if code, body := dataPlaneGet(t, p, tt.token); code != tt.code || !strings.Contains(body, tt.want) {
					t.Errorf("%d %s, want %d with %s", code, body, tt.code, tt.want)
				}
			})
		}
	})
	t.Run("the Istio policy guards the paths the data plane serves", func(t *testing.T) {
		paths := kubectl(t, "-n", localcluster.PolicyNamespace, "get", "authorizationpolicies.security.istio.io", sessions.PolicyName(s),
			"-o", "jsonpath={.spec.rules[0].to[0].operation.paths}")
		var policyPaths []string
		if err := json.Unmarshal([]byte(paths), &policyPaths); err != nil || len(policyPaths) != 2 {
			t.Fatalf("policy paths %s: %v", paths, err)
		}
		exact, prefix := policyPaths[0], strings.TrimSuffix(policyPaths[1], "*")
		good := token(t, ns, "sre", localcluster.DataPlaneAudience)
		for _, p := range []string{exact, prefix + "api"} {
			if code, body := dataPlaneGet(t, p, good); code != http.StatusOK {
				t.Errorf("the policy's path %q is not one the data plane serves: %d %s", p, code, body)
			}
		}
		aggregated := "/apis/clustergate.dev/v1alpha1/namespaces/" + ns + "/sessions/sre-work/proxy/api"
		if strings.HasPrefix(aggregated, prefix) || aggregated == exact {
			t.Errorf("the policy claims the aggregated path %s", aggregated)
		}
		claims := kubectl(t, "-n", localcluster.PolicyNamespace, "get", "authorizationpolicies.security.istio.io", sessions.PolicyName(s),
			"-o", "jsonpath={.spec.rules[*].when[0].key}={.spec.rules[*].when[0].notValues[0]}")
		if want := "request.auth.claims[iss] request.auth.claims[sub]=" + cp.DataPlaneIssuer + " " + garden; claims != want {
			t.Errorf("the policy matches %s, want %s: the issuer and the claim the data plane maps the owner from", claims, want)
		}
	})
	t.Run("a watch on the data plane ends when the session is deleted", func(t *testing.T) {
		ended := watchUntilEnd(t, sre)
		time.Sleep(time.Second)
		kubectl(t, "-n", ns, "delete", "session", "sre-work", "--wait=false")
		deleted := time.Now()
		select {
		case last := <-ended:
			t.Logf("the data-plane watch ended %s after the delete returned: %s", time.Since(deleted).Round(time.Millisecond), last)
			if !strings.Contains(last, `"type":"ERROR"`) {
				t.Errorf("last line %q, want a final ERROR event", last)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the data-plane watch outlived the session by 5 s")
		}
	})
	t.Run("the metrics tell the data plane apart", func(t *testing.T) {
		transport, err := rest.TransportFor(cp.FrontProxyConfig(cp.ClustergateURL, "admin", "system:masters"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: transport}).Get(cp.ClustergateURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		metrics, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(metrics), "\n") {
			count, found := strings.CutPrefix(line, `clustergate_proxy_request_duration_seconds_count{verb_class="read",way="data_plane"} `)
			if found && count != "0" {
				return
			}
		}
		t.Errorf("no data-plane reads counted in clustergate_proxy_request_duration_seconds")
	})
}
