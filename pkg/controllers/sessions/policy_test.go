// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestDesiredPolicy: a session's policy names exactly its paths on the
// gateway's data-plane port, and lets only its owner's issuer and name by.
func TestDesiredPolicy(t *testing.T) {
	cfg := IstioPolicyConfig{Selector: map[string]string{"istio": "gw"}, Port: 8444, Issuers: []IstioPolicyIssuer{
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
