// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package istioauthz

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/config/memory"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking"
	"istio.io/istio/pilot/pkg/networking/plugin/authz"
	"istio.io/istio/pilot/pkg/xds/filters"
	"istio.io/istio/pkg/config"
	configgateway "istio.io/istio/pkg/config/gateway"
	"istio.io/istio/pkg/config/labels"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/config/schema/gvk"
)

// The repository's files, by path from this module.
const (
	component        = "../../../artifacts/components/data-plane"
	serverDeployment = "../../../artifacts/server/deployment.yaml"
	// goldenPolicies are the server's per-session policies
	// (TestDesiredPolicyGolden in pkg/apiserver keeps them).
	goldenPolicies = "../../../pkg/apiserver/testdata/authorizationpolicies.yaml"
)

// Ports of the cases.
const (
	// dataPlanePort is the gateway's HTTPS server port (istio.yaml), the one
	// the server's --istio-gateway-port names in its policies.
	dataPlanePort = 8444
	// healthPort is the gateway's health port (Istio's status port).
	healthPort = 15021
	// apiPort is the server's serving port: the aggregated API, /metrics
	// and the probes, over TLS.
	apiPort = 8443
	// serverDataPlanePort is the server's own data-plane listener, over TLS.
	serverDataPlanePort = 9443
)

// oldPolicy is a per-session policy of the form the server wrote before:
// on the server's own pods, with no port and only HTTP conditions. On the
// server's TCP filter chains (its sidecar sees the aggregated API and the
// TLS data plane as TCP) Istio drops those conditions from a DENY rule,
// "to make a wider deny", and it denied every connection.
const oldPolicy = `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: session-11111111-1111-1111-1111-111111111111
  namespace: clustergate-system
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: clustergate
  action: DENY
  rules:
  - from:
    - source:
        notRequestPrincipals: ["*/alice"]
    to:
    - operation:
        paths: ["/sessions/sre/fix-etcd/*"]
`

// Layouts: the Istio objects in the cluster.
const (
	// shipped is the data-plane component with the golden per-session
	// policies.
	shipped = "shipped"
	// old is the old per-session policy alone.
	old = "old"
)

// Workloads whose filters are evaluated.
const (
	// gateway is the data plane's own ingress gateway (gateway.yaml).
	gateway = "gateway"
	// server is the server's pods, with a sidecar (artifacts/server).
	server = "server"
)

// outcome is what the RBAC filters do with a request, or what a case
// expects of them.
type outcome int

const (
	allowed outcome = iota
	denied
	// reported cases print what the filters do without asserting it.
	reported
)

func (o outcome) String() string {
	return [...]string{allowed: "allow", denied: "DENY", reported: "(reported)"}[o]
}

// Filter chains: an HTTP one sees requests, a TCP one connections.
const (
	httpChain = "HTTP"
	tcpChain  = "TCP"
)

// tcpNote explains the gateway's TCP case that is reported, not asserted.
const tcpNote = `(reported) The gateway's TCP filters may deny every connection to 8444,
the data-plane port: on a TCP filter chain istiod drops the paths and JWT
conditions of DENY rules, leaving their port. That is harmless: a gateway
builds TCP filter chains only for TCP and TLS servers and HTTPS it passes
through, and every server of its Gateways (checked) is HTTPS it terminates,
an HTTP filter chain, so these TCP filters are never installed. Other ports
must not be denied.`

// workload is a proxy as istiod knows it, and the class of the listeners
// whose HTTP filters it gets.
type workload struct {
	proxy *model.Proxy
	class networking.ListenerClass
}

// builtFilters are the RBAC filters istiod puts on a workload's HTTP and
// TCP filter chains.
type builtFilters struct {
	http []*hcm.HttpFilter
	tcp  []*listener.Filter
}

// token is a verified JWT's claims; nil is a request without one.
type token map[string]any

// TestAuthorization builds the RBAC filters of the gateway and the server
// from each layout, exactly as istiod does, and evaluates them.
func TestAuthorization(t *testing.T) {
	shippedConfigs := componentConfigs(t)
	shippedConfigs = append(shippedConfigs, istioConfigs(t, goldenPolicies, readFile(t, goldenPolicies))...)
	layouts := map[string][]config.Config{
		shipped: shippedConfigs,
		old:     istioConfigs(t, "oldPolicy", []byte(oldPolicy)),
	}
	workloads := map[string]workload{
		gateway: {workloadOf(t, filepath.Join(component, "gateway.yaml"), "clustergate-data-plane-gateway", model.Router), networking.ListenerClassGateway},
		server:  {workloadOf(t, serverDeployment, "clustergate", model.SidecarProxy), networking.ListenerClassSidecarInbound},
	}
	type key struct{ layout, workload string }
	built := map[key]builtFilters{}
	for _, layout := range []string{shipped, old} {
		push := pushContext(t, layouts[layout])
		for _, name := range []string{gateway, server} {
			w := workloads[name]
			// As istiod's listener builder: authz.NewBuilder lists the
			// policies that select the proxy (builder.New) and BuildHTTP
			// and BuildTCP translate them; a gateway or a sidecar does not
			// use filter state (only a waypoint does).
			b := authz.NewBuilder(authz.Local, push, w.proxy, false)
			built[key{layout, name}] = builtFilters{http: b.BuildHTTP(w.class), tcp: b.BuildTCP()}
			deny := push.AuthzPolicies.ListAuthorizationPolicies(
				model.PolicyMatcherForProxy(w.proxy).WithRootNamespace(push.AuthzPolicies.RootNamespace)).Deny
			var names []string
			for _, p := range deny {
				names = append(names, p.Name)
			}
			t.Logf("%s layout, %s: DENY policies %v", layout, name, names)
		}
	}

	// The server's pods are selected by no shipped policy: istiod gives
	// their sidecar no RBAC filter at all, whatever the sessions.
	if f := built[key{shipped, server}]; len(f.http) != 0 || len(f.tcp) != 0 {
		t.Errorf("the server's pods get %d HTTP and %d TCP RBAC filters, want none", len(f.http), len(f.tcp))
	}

	// What makes the gateway's TCP filters harmless (tcpNote).
	for _, c := range shippedConfigs {
		spec, ok := c.Spec.(*networkingv1alpha3.Gateway)
		if !ok || c.GroupVersionKind != gvk.Gateway || !labels.Instance(spec.GetSelector()).SubsetOf(workloads[gateway].proxy.Labels) {
			continue
		}
		for _, s := range spec.GetServers() {
			if !configgateway.IsHTTPServer(s) {
				t.Errorf("Gateway %s/%s: server %s on port %d gets a TCP filter chain, where DENY policies deny every connection to their ports",
					c.Namespace, c.Name, s.GetPort().GetName(), s.GetPort().GetNumber())
			}
		}
	}

	issuer := gatewayIssuer(t, shippedConfigs, workloads[gateway].proxy)
	tokens := map[string]token{
		"none":  nil,
		"alice": {"iss": issuer, "sub": "alice-id", "aud": "clustergate", "email": "alice@example.com", "email_verified": true},
		"bob":   {"iss": issuer, "sub": "bob-id", "aud": "clustergate", "email": "bob@example.com", "email_verified": true},
		// The gateway's JWT filter refuses (401) a token of an issuer its
		// RequestAuthentication does not name; this is the case where the
		// gateway trusts a second issuer, whose tokens may carry any email.
		"alice@other-issuer": {"iss": "https://other.example.com", "sub": "alice-id", "aud": "clustergate", "email": "alice@example.com"},
		// Istio's request principal is iss/sub: a token without sub has
		// none, and the require-JWT policy treats it as no token.
		"alice-without-sub": {"iss": issuer, "aud": "clustergate", "email": "alice@example.com", "email_verified": true},
	}

	tests := []struct {
		name     string
		layout   string
		workload string
		chain    string
		port     uint32
		path     string
		token    string
		want     outcome
	}{
		{"owner, a path in the session", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api", "alice", allowed},
		{"owner, the session's root", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd", "alice", allowed},
		{"owner, with a query", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api?watch=true", "alice", allowed},
		{"another owner, a path in the session", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api", "bob", denied},
		{"another owner, the session's root", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd", "bob", denied},
		{"another owner, with a query", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd?watch=true", "bob", denied},
		{"another owner, his own session", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/bobs/api", "bob", allowed},
		{"owner's email from another issuer", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api", "alice@other-issuer", denied},
		{"owner's token without sub", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api", "alice-without-sub", denied},
		{"no JWT, a session", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd/api", "none", denied},
		{"no JWT, a session's root", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd", "none", denied},
		{"no JWT, another session", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/bobs/api", "none", denied},
		{"no JWT, a session that does not exist", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/unknown/api", "none", denied},
		{"garden user's session, its owner's name", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/garden-only/api", "alice", denied},
		{"garden user's session, its root", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/garden-only", "alice", denied},
		{"garden user's session, anyone", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/garden-only/api", "bob", denied},
		{"garden user's session, no JWT", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/garden-only/api", "none", denied},
		// A policy's paths end at a segment: fix-etcd's does not cover
		// fix-etcd-2 (no session there; the server answers 404).
		{"a session whose name extends another's", shipped, gateway, httpChain, dataPlanePort, "/sessions/sre/fix-etcd-2/api", "bob", allowed},
		{"not a session path, no JWT", shipped, gateway, httpChain, dataPlanePort, "/readyz", "none", allowed},
		{"not a session path, a JWT", shipped, gateway, httpChain, dataPlanePort, "/readyz", "bob", allowed},
		{"the root, no JWT", shipped, gateway, httpChain, dataPlanePort, "/", "none", allowed},
		{"the health port", shipped, gateway, httpChain, healthPort, "/healthz/ready", "none", allowed},
		{"another port, a session path, no JWT", shipped, gateway, httpChain, healthPort, "/sessions/sre/fix-etcd/api", "none", allowed},
		// The gateway's TCP filters deny on 8444 only, where they are
		// never installed (tcpNote): reported; other ports stay open.
		{"TCP, the data-plane port", shipped, gateway, tcpChain, dataPlanePort, "", "none", reported},
		{"TCP, the health port", shipped, gateway, tcpChain, healthPort, "", "none", allowed},
		{"TCP, another port", shipped, gateway, tcpChain, 15443, "", "none", allowed},
		{"server, the aggregated API", shipped, server, tcpChain, apiPort, "", "none", allowed},
		{"server, the data plane", shipped, server, tcpChain, serverDataPlanePort, "", "none", allowed},
		{"server, HTTP, the data plane, not the owner", shipped, server, httpChain, serverDataPlanePort, "/sessions/sre/fix-etcd/api", "bob", allowed},
		{"server, HTTP, the aggregated API", shipped, server, httpChain, apiPort, "/apis/clustergate.io/v1alpha1/sessions", "none", allowed},
		// The old defect: the evaluator catches it.
		{"old policy: the aggregated API", old, server, tcpChain, apiPort, "", "none", denied},
		{"old policy: the data plane", old, server, tcpChain, serverDataPlanePort, "", "none", denied},
	}

	var table strings.Builder
	w := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CASE\tLAYOUT\tWORKLOAD\tCHAIN\tPORT\tPATH\tJWT\tOUTCOME\tWANT\tBY")
	for _, tt := range tests {
		f, ok := built[key{tt.layout, tt.workload}]
		if !ok {
			t.Fatalf("%s: no %s workload in the %s layout", tt.name, tt.workload, tt.layout)
		}
		tk, ok := tokens[tt.token]
		if !ok {
			t.Fatalf("%s: no token %q", tt.name, tt.token)
		}
		r := request{port: tt.port, path: tt.path}
		var v verdict
		var err error
		switch tt.chain {
		case httpChain:
			r.metadata = jwtMetadata(t, tk)
			v, err = evalHTTP(f.http, r)
		case tcpChain:
			// A network filter sees no JWT: there is no HTTP.
			v, err = evalTCP(f.tcp, r)
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := allowed
		if v.denied {
			got = denied
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n",
			tt.name, tt.layout, tt.workload, tt.chain, tt.port, tt.path, tt.token, got, tt.want, v.by)
		if tt.want != reported && got != tt.want {
			t.Errorf("%s: %s %s to %d %s with JWT %s: got %s (%s), want %s", tt.name, tt.workload, tt.chain, tt.port, tt.path, tt.token, got, v.by, tt.want)
		}
	}
	w.Flush()
	t.Log("\n" + table.String() + "\n" + tcpNote)
}

// componentConfigs are the Istio objects of the data-plane component: the
// files its kustomization deploys, not its patches.
func componentConfigs(t *testing.T) []config.Config {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(component, "kustomization.yaml")), &k); err != nil {
		t.Fatal(err)
	}
	var configs []config.Config
	for _, r := range k.Resources {
		file := filepath.Join(component, r)
		configs = append(configs, istioConfigs(t, file, readFile(t, file))...)
	}
	return configs
}

// istioConfigs parses the Istio objects of a YAML stream, validated as
// istiod validates them; other kinds (a Deployment, a Role, …) are left out.
func istioConfigs(t *testing.T, source string, data []byte) []config.Config {
	t.Helper()
	configs, _, err := crd.ParseInputs(string(data))
	if err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	return configs
}

// pushContext is what istiod computes from a config store for the
// authorization builder: the mesh config (the default one, root namespace
// istio-system) and the authorization policies.
func pushContext(t *testing.T, configs []config.Config) *model.PushContext {
	t.Helper()
	store := memory.Make(collections.Pilot)
	for _, c := range configs {
		if _, err := store.Create(c); err != nil {
			t.Fatalf("%s %s/%s: %v", c.GroupVersionKind.Kind, c.Namespace, c.Name, err)
		}
	}
	env := &model.Environment{ConfigStore: store, Watcher: meshwatcher.NewTestWatcher(mesh.DefaultMeshConfig())}
	return &model.PushContext{Mesh: env.Mesh(), AuthzPolicies: model.GetAuthorizationPolicies(env)}
}

// workloadOf is the proxy of a Deployment's pods: its namespace and its pod
// template's labels, which workload selectors match.
func workloadOf(t *testing.T, file, name string, nodeType model.NodeType) *model.Proxy {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(readFile(t, file))))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s: no Deployment %s", file, name)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if d.Kind != "Deployment" || d.Name != name {
			continue
		}
		podLabels := d.Spec.Template.Labels
		return &model.Proxy{
			Type:            nodeType,
			ConfigNamespace: d.Namespace,
			Labels:          podLabels,
			Metadata:        &model.NodeMetadata{Namespace: d.Namespace, Labels: podLabels},
		}
	}
}

// gatewayIssuer is the one JWT issuer the gateway's RequestAuthentication
// trusts: the tokens of the cases are that issuer's, so that the golden
// policies (made from authentication.yaml) and istio.yaml must agree.
func gatewayIssuer(t *testing.T, configs []config.Config, gw *model.Proxy) string {
	t.Helper()
	var issuers []string
	for _, c := range configs {
		if c.GroupVersionKind != gvk.RequestAuthentication || c.Namespace != gw.ConfigNamespace {
			continue
		}
		spec := c.Spec.(*securityv1beta1.RequestAuthentication)
		if !labels.Instance(spec.GetSelector().GetMatchLabels()).SubsetOf(gw.Labels) {
			continue
		}
		for _, rule := range spec.GetJwtRules() {
			issuers = append(issuers, rule.GetIssuer())
		}
	}
	if len(issuers) != 1 {
		t.Fatalf("the gateway's RequestAuthentications trust issuers %v, want one", issuers)
	}
	return issuers[0]
}

// jwtMetadata is the dynamic metadata of a request with a verified token:
// Envoy's JWT filter, as istiod configures it (payload_in_metadata), puts
// the token's claims under its own name; istiod's RBAC matchers for
// request.auth.* read them there.
func jwtMetadata(t *testing.T, tk token) map[string]*structpb.Struct {
	t.Helper()
	if tk == nil {
		return nil
	}
	payload, err := structpb.NewStruct(tk)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*structpb.Struct{filters.EnvoyJwtFilterName: {Fields: map[string]*structpb.Value{
		filters.EnvoyJwtFilterPayload: structpb.NewStructValue(payload),
	}}}
}

// readFile reads a file of the repository; the golden policies come from
// another package's test.
func readFile(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) && file == goldenPolicies {
		t.Fatalf("%s is missing: UPDATE_GOLDEN=1 go test -tags=fieldsv1string -run TestDesiredPolicyGolden ./pkg/apiserver/ writes it", file)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}
