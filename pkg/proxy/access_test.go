// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// targetDiscovery is what discoveryBackend's target serves of discovery:
// group version path to its resources and whether each is namespaced.
var targetDiscovery = map[string]map[string]bool{
	"/api/v1":                            {"pods": true, "secrets": true, "nodes": false, "namespaces": false},
	"/apis/apps/v1":                      {"deployments": true},
	"/apis/rbac.authorization.k8s.io/v1": {"clusterroles": false, "roles": true},
}

// discoveryBackend is a target that serves the proxy's discovery of
// targetDiscovery, fails that of the group broken.example.com, and counts
// both the proxy's discovery requests and the proxied requests that reach
// it, answering upgrades with 400 and the rest with 200.
func discoveryBackend(t *testing.T) (tgt Target, reached, discovered *atomic.Int64) {
	t.Helper()
	reached, discovered = &atomic.Int64{}, &atomic.Int64{}
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != discoveryUserAgent {
			reached.Add(1)
			if r.Header.Get("Upgrade") != "" {
				http.Error(w, "no upgrade here", http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, "ok")
			return
		}
		discovered.Add(1)
		path := strings.TrimPrefix(r.URL.Path, "/prefix")
		resources, ok := targetDiscovery[path]
		switch {
		case ok:
			list := metav1.APIResourceList{GroupVersion: strings.TrimPrefix(strings.TrimPrefix(path, "/api/"), "/apis/")}
			for name, namespaced := range resources {
				list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: namespaced},
					metav1.APIResource{Name: name + "/status", Namespaced: namespaced})
			}
			_ = json.NewEncoder(w).Encode(list)
		case strings.HasPrefix(path, "/apis/broken.example.com/"):
			http.Error(w, "etcd is down", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	})
	tgt = target(u, tr)
	tgt.TargetName, tgt.Level = "shoot/local", "debugger"
	return tgt, reached, discovered
}

// accessConfig has the deny rules the tests hold sessions to.
var accessConfig = &sessionaccess.Configuration{DenyRules: []sessionaccess.DenyRule{
	{Name: "no-secrets-in-kube-system", Message: "kube-system's Secrets are the cluster's own credentials",
		Resources: []string{"secrets"}, Namespaces: []string{"kube-system"}},
	{Name: "no-exec-in-kube-system", Verbs: []string{"*"}, Resources: []string{"pods/exec", "pods/attach"}, Namespaces: []string{"kube-system"}},
	{Name: "no-deletes-in-kube-system", Verbs: []string{"delete", "deletecollection"}, Namespaces: []string{"kube-system"}},
	{Name: "no-writes-on-prod", Verbs: []string{"create", "update", "patch", "delete"}, Targets: []string{"shoot/prod"}, Levels: []string{"debugger"}},
}}

// Outcomes of a request held to its session's scope and the deny rules,
// besides allowed.
const (
	scopeRefused outcome = "scope"
	denyRefused  outcome = "deny"
	unavailable  outcome = "discovery"
)

// TestAccess: through both ways in, a scoped session is refused everything
// outside its namespaces with a 403 Status naming its scope, and every
// session what a deny rule holds with a 403 Status naming the rule, before
// the request reaches the target; the refusal is in the request log and
// the metrics. What discovery cannot decide is refused with a 503.
func TestAccess(t *testing.T) {
	shop := []string{"shop", "shop-db"}
	tests := []struct {
		name, method, path, upgrade string
		scope                       []string
		// targetName, when set, is the session's target.
		targetName string
		want       outcome
		// message is in the refusal's Status: the part after the scope, or
		// the rule's name and message.
		message string
	}{
		{name: "a pod in scope", method: http.MethodGet, path: "/api/v1/namespaces/shop/pods/p", scope: shop, want: allowed},
		{name: "pods of the second namespace", method: http.MethodGet, path: "/api/v1/namespaces/shop-db/pods", scope: shop, want: allowed},
		{name: "a watch in scope", method: http.MethodGet, path: "/api/v1/namespaces/shop/pods?watch=true", scope: shop, want: allowed},
		{name: "a deployment created in scope", method: http.MethodPost, path: "/apis/apps/v1/namespaces/shop/deployments", scope: shop, want: allowed},
		{name: "exec in scope over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/shop/pods/p/exec?command=sh", upgrade: "SPDY/3.1", scope: shop, want: allowed},
		{name: "pods of another namespace", method: http.MethodGet, path: "/api/v1/namespaces/kube-system/pods", scope: shop,
			want: scopeRefused, message: "clustergate refuses a list of pods in namespace kube-system"},
		{name: "exec in another namespace over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/exec?command=sh", upgrade: "SPDY/3.1", scope: shop,
			want: scopeRefused, message: "clustergate refuses a create of pods/exec p in namespace default"},
		{name: "exec in another namespace over WebSocket", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/exec?command=sh", upgrade: "websocket", scope: shop,
			want: scopeRefused, message: "clustergate refuses a get of pods/exec p in namespace default"},
		{name: "pods of all namespaces", method: http.MethodGet, path: "/api/v1/pods", scope: shop,
			want: scopeRefused, message: "clustergate refuses a list of pods across all namespaces"},
		{name: "a watch of all pods", method: http.MethodGet, path: "/api/v1/pods?watch=true", scope: shop,
			want: scopeRefused, message: "clustergate refuses a watch of pods across all namespaces"},
		{name: "a watch of all pods behind the watch prefix", method: http.MethodGet, path: "/api/v1/watch/pods", scope: shop,
			want: scopeRefused, message: "clustergate refuses a watch of pods across all namespaces"},
		{name: "deployments of all namespaces", method: http.MethodGet, path: "/apis/apps/v1/deployments", scope: shop,
			want: scopeRefused, message: "clustergate refuses a list of deployments.apps across all namespaces"},
		{name: "a Namespace created", method: http.MethodPost, path: "/api/v1/namespaces", scope: shop,
			want: scopeRefused, message: "clustergate refuses a create of namespaces: a scoped session does not write cluster-scoped resources, Namespaces included"},
		{name: "its own Namespace deleted", method: http.MethodDelete, path: "/api/v1/namespaces/shop", scope: shop,
			want: scopeRefused, message: "clustergate refuses a delete of namespaces shop: a scoped session does not write cluster-scoped resources"},
		{name: "its own Namespace updated", method: http.MethodPut, path: "/api/v1/namespaces/shop", scope: shop,
			want: scopeRefused, message: "clustergate refuses an update of namespaces shop"},
		{name: "its own Namespace finalized", method: http.MethodPut, path: "/api/v1/namespaces/shop/finalize", scope: shop,
			want: scopeRefused, message: "clustergate refuses an update of namespaces/finalize shop"},
		{name: "its own Namespace read", method: http.MethodGet, path: "/api/v1/namespaces/shop", scope: shop, want: allowed},
		{name: "another Namespace read", method: http.MethodGet, path: "/api/v1/namespaces/kube-system", scope: shop, want: allowed},
		{name: "the Namespaces listed", method: http.MethodGet, path: "/api/v1/namespaces", scope: shop, want: allowed},
		{name: "the nodes listed", method: http.MethodGet, path: "/api/v1/nodes", scope: shop, want: allowed},
		{name: "a node read", method: http.MethodGet, path: "/api/v1/nodes/n1", scope: shop, want: allowed},
		{name: "the ClusterRoles watched", method: http.MethodGet, path: "/apis/rbac.authorization.k8s.io/v1/clusterroles?watch=1", scope: shop, want: allowed},
		{name: "a node deleted", method: http.MethodDelete, path: "/api/v1/nodes/n1", scope: shop,
			want: scopeRefused, message: "clustergate refuses a delete of nodes n1: a scoped session does not write cluster-scoped resources"},
		{name: "a ClusterRole created", method: http.MethodPost, path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", scope: shop,
			want: scopeRefused, message: "clustergate refuses a create of clusterroles.rbac.authorization.k8s.io: a scoped session does not write cluster-scoped resources"},
		{name: "a node's status patched", method: http.MethodPatch, path: "/api/v1/nodes/n1/status", scope: shop,
			want: scopeRefused, message: "clustergate refuses a patch of nodes/status n1"},
		{name: "the kubelet's pods through a node's proxy", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/pods", scope: shop,
			want: scopeRefused, message: "clustergate refuses a get of nodes/proxy n1: the proxy of a cluster-scoped resource reaches beyond its namespaces"},
		{name: "the kubelet's exec over WebSocket", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/exec/default/p/c?command=sh", upgrade: "websocket", scope: shop,
			want: scopeRefused, message: "clustergate refuses a get of nodes/proxy n1"},
		{name: "the kubelet through the deprecated proxy path", method: http.MethodGet, path: "/api/v1/proxy/nodes/n1/pods", scope: shop,
			want: scopeRefused, message: "clustergate refuses a proxy of nodes n1: the proxy of a cluster-scoped resource reaches beyond its namespaces"},
		{name: "a pod through the deprecated proxy path in scope", method: http.MethodGet, path: "/api/v1/proxy/namespaces/shop/pods/p/", scope: shop, want: allowed},
		{name: "a resource the target does not list", method: http.MethodGet, path: "/apis/apps/v1/widgets", scope: shop,
			want: scopeRefused, message: "clustergate refuses a list of widgets.apps: the target's discovery does not list the resource"},
		{name: "a group the target does not serve", method: http.MethodGet, path: "/apis/example.com/v1/widgets", scope: shop,
			want: scopeRefused, message: "clustergate refuses a list of widgets.example.com: the target's discovery does not list the resource"},
		{name: "kubectl auth whoami", method: http.MethodPost, path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", scope: shop, want: allowed},
		{name: "kubectl auth can-i", method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", scope: shop, want: allowed},
		{name: "kubectl auth can-i --list", method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", scope: shop, want: allowed},
		{name: "a SubjectAccessReview", method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", scope: shop,
			want: scopeRefused, message: "clustergate refuses a create of subjectaccessreviews.authorization.k8s.io"},
		{name: "discovery", method: http.MethodGet, path: "/api", scope: shop, want: allowed},
		{name: "discovery of the groups", method: http.MethodGet, path: "/apis", scope: shop, want: allowed},
		{name: "discovery of a group version", method: http.MethodGet, path: "/apis/apps/v1", scope: shop, want: allowed},
		{name: "the version", method: http.MethodGet, path: "/version", scope: shop, want: allowed},
		{name: "the OpenAPI", method: http.MethodGet, path: "/openapi/v3", scope: shop, want: allowed},
		{name: "the discovery of a scoped session's request fails", method: http.MethodGet, path: "/apis/broken.example.com/v1/things", scope: shop,
			want: unavailable, message: "clustergate cannot tell whether things.broken.example.com is namespaced, which its scope and deny rules need to know: the target's discovery failed: GET /apis/broken.example.com/v1: the target answered 500"},
		{name: "a path the target cannot serve", method: http.MethodGet, path: "/api/v1/watch", scope: shop,
			want: "bad request", message: "clustergate cannot tell what /api/v1/watch does on the target"},

		{name: "a Secret of kube-system", method: http.MethodGet, path: "/api/v1/namespaces/kube-system/secrets/s",
			want: denyRefused, message: "denied by clustergate rule no-secrets-in-kube-system: kube-system's Secrets are the cluster's own credentials"},
		{name: "the Secrets of all namespaces", method: http.MethodGet, path: "/api/v1/secrets",
			want: denyRefused, message: "denied by clustergate rule no-secrets-in-kube-system"},
		{name: "a watch of all Secrets", method: http.MethodGet, path: "/api/v1/watch/secrets",
			want: denyRefused, message: "denied by clustergate rule no-secrets-in-kube-system"},
		{name: "the Secrets of default", method: http.MethodGet, path: "/api/v1/namespaces/default/secrets", want: allowed},
		{name: "exec in kube-system over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/kube-system/pods/p/exec?command=sh", upgrade: "SPDY/3.1",
			want: denyRefused, message: "denied by clustergate rule no-exec-in-kube-system"},
		{name: "exec in kube-system over WebSocket", method: http.MethodGet, path: "/api/v1/namespaces/kube-system/pods/p/exec?command=sh", upgrade: "websocket",
			want: denyRefused, message: "denied by clustergate rule no-exec-in-kube-system"},
		{name: "attach in kube-system", method: http.MethodPost, path: "/api/v1/namespaces/kube-system/pods/p/attach", upgrade: "SPDY/3.1",
			want: denyRefused, message: "denied by clustergate rule no-exec-in-kube-system"},
		{name: "exec in default", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/exec?command=sh", upgrade: "SPDY/3.1", want: allowed},
		{name: "the Namespace kube-system deleted", method: http.MethodDelete, path: "/api/v1/namespaces/kube-system",
			want: denyRefused, message: "denied by clustergate rule no-deletes-in-kube-system"},
		{name: "a node deleted, no namespace's", method: http.MethodDelete, path: "/api/v1/nodes/n1", want: allowed},
		{name: "a write on another target", method: http.MethodPost, path: "/api/v1/namespaces/default/pods", targetName: "shoot/prod",
			want: denyRefused, message: "denied by clustergate rule no-writes-on-prod"},
		{name: "a read on another target", method: http.MethodGet, path: "/api/v1/namespaces/default/pods", targetName: "shoot/prod", want: allowed},
		{name: "a Secret of kube-system through a scoped session", method: http.MethodGet, path: "/api/v1/namespaces/kube-system/secrets/s", scope: shop,
			want: denyRefused, message: "denied by clustergate rule no-secrets-in-kube-system"},
		{name: "the discovery of a rule's request fails", method: http.MethodGet, path: "/apis/broken.example.com/v1/secrets",
			want: unavailable, message: "clustergate cannot tell whether secrets.broken.example.com is namespaced"},
	}
	for _, way := range []Way{WayAggregated, WayDataPlane} {
		for _, tt := range tests {
			t.Run(string(way)+"/"+tt.name, func(t *testing.T) {
				tgt, reached, _ := discoveryBackend(t)
				tgt.Way, tgt.Scope = way, tt.scope
				if tt.targetName != "" {
					tgt.TargetName = tt.targetName
				}
				s, err := store.NewLocal(t.TempDir())
				must(t, err)
				rec := recording.New(recording.Config{Store: s, Mode: recording.ModeBestEffort, FlushInterval: time.Hour})
				r := NewTracker(clock.RealClock{}, Limits{})
				r.RecordWith(rec)
				r.EnforceAccess(accessConfig)
				base := strings.Replace(serveProxy(t, r, tgt), "ws://", "http://", 1)

				req, err := http.NewRequest(tt.method, base+"/proxy"+tt.path, nil)
				must(t, err)
				if tt.upgrade != "" {
					req.Header.Set("Connection", "Upgrade")
					req.Header.Set("Upgrade", tt.upgrade)
				}
				rule := ""
				if _, name, ok := strings.Cut(tt.message, "denied by clustergate rule "); ok {
					rule, _, _ = strings.Cut(name, ":")
				}
				refusals := map[string]float64{}
				for _, reason := range []string{reasonScope, reasonDeny, reasonDiscovery} {
					refusals[reason] = counter(t, refusedRequests.WithLabelValues(reason))
				}
				var denials float64
				if rule != "" {
					denials = counter(t, deniedRequests.WithLabelValues(rule))
				}
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()

				if tt.want == allowed {
					if reached.Load() != 1 || resp.StatusCode == http.StatusForbidden {
						t.Errorf("got %d %s after %d requests reached the target, want it passed on once", resp.StatusCode, body, reached.Load())
					}
					for reason, before := range refusals {
						if n := counter(t, refusedRequests.WithLabelValues(reason)) - before; n != 0 {
							t.Errorf("refused_requests_total{reason=%q} went up by %v", reason, n)
						}
					}
					// An exec's recording ends after its response.
					finishedStreams(t, s, tt.upgrade != "")
					return
				}
				code, reason, prefix := http.StatusForbidden, metav1.StatusReasonForbidden, "session sre/fix: "
				switch tt.want {
				case scopeRefused:
					prefix = "session sre/fix is scoped to namespaces shop, shop-db: "
				case unavailable:
					code, reason = http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
				case "bad request":
					code, reason = http.StatusBadRequest, metav1.StatusReasonBadRequest
				}
				var status metav1.Status
				if resp.StatusCode != code || json.Unmarshal(body, &status) != nil || status.Reason != reason || !strings.Contains(status.Message, prefix+tt.message) {
					t.Errorf("got %d %s, want a %d Status saying %q", resp.StatusCode, body, code, prefix+tt.message)
				}
				if reached.Load() != 0 {
					t.Errorf("a refused request reached the target")
				}
				if tt.want != "bad request" {
					if n := counter(t, refusedRequests.WithLabelValues(string(tt.want))) - refusals[string(tt.want)]; n != 1 {
						t.Errorf("refused_requests_total{reason=%q} went up by %v, want 1", tt.want, n)
					}
				}
				if rule != "" {
					if n := counter(t, deniedRequests.WithLabelValues(rule)) - denials; n != 1 {
						t.Errorf("denied_requests_total{rule=%q} went up by %v, want 1", rule, n)
					}
				}

				// Run writes the request log as it ends.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rec.Run(ctx)
				var logged []v1alpha1.RequestLogEntry
				_, err = recording.Reader{Store: s}.Requests(context.Background(), "sre", "fix", 0, "", func(r *v1alpha1.RequestLogEntry) error {
					logged = append(logged, *r)
					return nil
				})
				must(t, err)
				if len(logged) != 1 || logged[0].Status != code || logged[0].Way != string(way) || !strings.Contains(logged[0].CloseReason, prefix+tt.message) {
					t.Errorf("request log %+v, want the refusal", logged)
				}
			})
		}
	}
}

// TestAccessDiscoveryOnlyWhenNeeded: a request without a namespace asks
// the target's discovery only when the session is scoped or a deny rule
// would hold it if it reached all namespaces; the answer is cached.
func TestAccessDiscoveryOnlyWhenNeeded(t *testing.T) {
	tests := []struct {
		name  string
		scope []string
		paths []string
		want  int64
	}{
		{name: "no rule holds pods", paths: []string{"/api/v1/pods", "/api/v1/nodes"}, want: 0},
		{name: "a rule holds Secrets of kube-system", paths: []string{"/api/v1/secrets", "/api/v1/namespaces/kube-system/secrets"}, want: 1},
		{name: "a scoped session, cached", scope: []string{"shop"}, paths: []string{"/api/v1/nodes", "/api/v1/nodes", "/api/v1/namespaces", "/api/v1/namespaces/shop/pods"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _, discovered := discoveryBackend(t)
			tgt.Scope = tt.scope
			r := NewTracker(clock.RealClock{}, Limits{})
			r.EnforceAccess(accessConfig)
			base := strings.Replace(serveProxy(t, r, tgt), "ws://", "http://", 1)
			for _, path := range tt.paths {
				resp, err := http.Get(base + "/proxy" + path)
				must(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if n := discovered.Load(); n != tt.want {
				t.Errorf("discovery fetched %d times, want %d", n, tt.want)
			}
		})
	}
}

// TestDiscoveryCache: a group version's discovery is fetched once and
// trusted for its TTL; a resource it does not list fetches it again once
// it is older than discoveryRefresh; a failure is not cached.
func TestDiscoveryCache(t *testing.T) {
	tgt, _, discovered := discoveryBackend(t)
	clk := clocktesting.NewFakeClock(time.Now())
	d := newDiscovery(clk)
	ctx := context.Background()
	steps := []struct {
		name                    string
		wait                    time.Duration
		group, resource         string
		namespaced, listed, err bool
		fetches                 int64
	}{
		{name: "first lookup", resource: "pods", namespaced: true, listed: true, fetches: 1},
		{name: "cached", resource: "nodes", listed: true, fetches: 1},
		{name: "not listed, fetched a moment ago", resource: "widgets", fetches: 1},
		{name: "not listed, fetched a while ago", wait: discoveryRefresh, resource: "widgets", fetches: 2},
		{name: "listed, within the TTL", wait: discoveryTTL - discoveryRefresh - time.Second, resource: "pods", namespaced: true, listed: true, fetches: 2},
		{name: "past the TTL", wait: discoveryRefresh + 2*time.Second, resource: "pods", namespaced: true, listed: true, fetches: 3},
		{name: "a failure", group: "broken.example.com", resource: "things", err: true, fetches: 4},
		{name: "a failure is not cached", group: "broken.example.com", resource: "things", err: true, fetches: 5},
	}
	for _, s := range steps {
		clk.Step(s.wait)
		version := "v1"
		namespaced, listed, err := d.namespaced(ctx, tgt, s.group, version, s.resource)
		if namespaced != s.namespaced || listed != s.listed || (err != nil) != s.err || discovered.Load() != s.fetches {
			t.Errorf("%s: namespaced %v, listed %v, error %v after %d fetches; want %v, %v, error %v after %d",
				s.name, namespaced, listed, err, discovered.Load(), s.namespaced, s.listed, s.err, s.fetches)
		}
	}
}

// TestAccessParsesOnce: a request is parsed into its RequestInfo at most
// once, and not at all by an unscoped session on a server without deny
// rules unless it was before (a watch, to tell that it is long-running).
func TestAccessParsesOnce(t *testing.T) {
	var parses atomic.Int64
	parse := newRequestInfo
	newRequestInfo = func(req *http.Request) (*request.RequestInfo, error) {
		parses.Add(1)
		return parse(req)
	}
	t.Cleanup(func() { newRequestInfo = parse })
	tests := []struct {
		name   string
		access *sessionaccess.Configuration
		scope  []string
		path   string
		want   int64
	}{
		{name: "unscoped, no rules", path: "/api/v1/namespaces/shop/pods", want: 0},
		{name: "unscoped, no rules configured", access: &sessionaccess.Configuration{}, path: "/api/v1/namespaces/shop/pods", want: 0},
		{name: "unscoped, no rules, a watch", path: "/api/v1/namespaces/shop/pods?watch=true", want: 1},
		{name: "unscoped, deny rules", access: accessConfig, path: "/api/v1/namespaces/shop/pods", want: 1},
		{name: "scoped", scope: []string{"shop"}, path: "/api/v1/namespaces/shop/pods", want: 1},
		{name: "scoped, deny rules, a watch", access: accessConfig, scope: []string{"shop"}, path: "/api/v1/namespaces/shop/pods?watch=true", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, reached, _ := discoveryBackend(t)
			tgt.Scope = tt.scope
			r := NewTracker(clock.RealClock{}, Limits{})
			r.EnforceAccess(tt.access)
			base := strings.Replace(serveProxy(t, r, tgt), "ws://", "http://", 1)
			before := parses.Load()
			resp, err := http.Get(base + "/proxy" + tt.path)
			must(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n := parses.Load() - before; n != tt.want || reached.Load() != 1 {
				t.Errorf("parsed %d times, reached the target %d times; want %d and once", n, reached.Load(), tt.want)
			}
		})
	}
}
