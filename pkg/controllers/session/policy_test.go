// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/dataplane"
)

// goldenPolicies holds the policies the server writes for the sessions of
// policySessions under the shipped data-plane component. The Istio proof
// (hack/tools/istio-authz) feeds them with the component through Istio's
// own authorization builder; TestDesiredPolicyGolden keeps them current
// (UPDATE_GOLDEN=1 rewrites them).
const goldenPolicies = "testdata/authorizationpolicies.yaml"

// policySessions: the owner's own session and another owner's, both named
// by the shipped issuer, and a garden user's, whom no data-plane issuer names.
var policySessions = []struct{ namespace, name, uid, owner string }{
	{"sre", "fix-etcd", "11111111-1111-1111-1111-111111111111", "dataplane:alice@example.com"},
	{"sre", "bobs", "22222222-2222-2222-2222-222222222222", "dataplane:bob@example.com"},
	{"sre", "garden-only", "33333333-3333-3333-3333-333333333333", "alice@example.com"},
}

// shippedPolicyConfig is what the server makes of the flags and the
// AuthenticationConfiguration of artifacts/components/data-plane.
func shippedPolicyConfig(t *testing.T) PolicyConfig {
	t.Helper()
	data, err := os.ReadFile("../../../artifacts/components/data-plane/authentication.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "authentication.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["authentication.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := dataplane.ReadAuthenticationConfig(file, false)
	if err != nil {
		t.Fatalf("the shipped AuthenticationConfiguration: %v", err)
	}
	policy := PolicyConfig{Namespace: "clustergate-data-plane", Selector: map[string]string{"istio": "clustergate-data-plane"}, Port: 8444}
	for _, issuer := range dataplane.Issuers(cfg) {
		policy.Issuers = append(policy.Issuers, PolicyIssuer(issuer))
	}
	return policy
}

// TestDesiredPolicyGolden: the policies of the shipped layout are the ones
// the Istio proof evaluates.
func TestDesiredPolicyGolden(t *testing.T) {
	cfg := shippedPolicyConfig(t)
	var out bytes.Buffer
	for _, ps := range policySessions {
		s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: ps.namespace, Name: ps.name, UID: types.UID(ps.uid)}}
		s.Spec.Owner.Username = ps.owner
		policy := &istiosecurityv1.AuthorizationPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: PolicyName(s), Namespace: cfg.Namespace},
		}
		DesiredPolicy(s, cfg).DeepCopyInto(&policy.Spec)
		data, err := yaml.Marshal(policy)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("# " + ps.namespace + "/" + ps.name + " of " + ps.owner + "\n")
		out.Write(data)
		out.WriteString("---\n")
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(goldenPolicies, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(goldenPolicies)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(golden), out.String()); diff != "" {
		t.Errorf("%s is not what the server writes (UPDATE_GOLDEN=1 rewrites it; then run hack/tools/istio-authz) (-file +now):\n%s", goldenPolicies, diff)
	}
}

// TestDesiredPolicy: a session's policy names exactly its paths on the
// gateway's data-plane port, and lets only its owner's issuer and name by.
func TestDesiredPolicy(t *testing.T) {
	cfg := PolicyConfig{Selector: map[string]string{"istio": "gw"}, Port: 8444, Issuers: []PolicyIssuer{
		{URL: "https://login.example.com", UsernameClaim: "email", UsernamePrefix: "dataplane:"},
		{URL: "https://sso.example.com", UsernameClaim: "sub", UsernamePrefix: "sso:"},
	}}
	tests := []struct {
		owner     string
		wantWhens [][2]string
	}{
		{owner: "dataplane:alice@example.com", wantWhens: [][2]string{{"request.auth.claims[iss]", "https://login.example.com"}, {"request.auth.claims[email]", "alice@example.com"}}},
		{owner: "sso:1234", wantWhens: [][2]string{{"request.auth.claims[iss]", "https://sso.example.com"}, {"request.auth.claims[sub]", "1234"}}},
		// Garden users and names an issuer could only produce from an empty
		// claim: nobody gets through.
		{owner: "alice"},
		{owner: "dataplane:"},
	}
	for _, tt := range tests {
		t.Run(tt.owner, func(t *testing.T) {
			s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "sre", Name: "fix"}}
			s.Spec.Owner.Username = tt.owner
			p := DesiredPolicy(s, cfg)
			if p.Action.String() != "DENY" || p.Selector.MatchLabels["istio"] != "gw" {
				t.Errorf("action %s, selector %v", p.Action, p.Selector.MatchLabels)
			}
			var whens [][2]string
			for _, r := range p.Rules {
				if len(r.To) != 1 || len(r.From) != 0 {
					t.Fatalf("rule %v", r)
				}
				op := r.To[0].Operation
				if diff := cmp.Diff([]string{"8444"}, op.Ports); diff != "" {
					t.Errorf("ports: %s", diff)
				}
				if diff := cmp.Diff([]string{"/sessions/sre/fix", "/sessions/sre/fix/*"}, op.Paths); diff != "" {
					t.Errorf("paths: %s", diff)
				}
				for _, w := range r.When {
					if len(w.NotValues) != 1 || len(w.Values) != 0 {
						t.Fatalf("condition %v", w)
					}
					whens = append(whens, [2]string{w.Key, w.NotValues[0]})
				}
			}
			if len(tt.wantWhens) == 0 && len(p.Rules) != 1 {
				t.Errorf("%d rules for an owner no issuer names, want one that denies everyone", len(p.Rules))
			}
			if diff := cmp.Diff(tt.wantWhens, whens); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
