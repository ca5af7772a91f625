// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"maps"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// IstioPolicyConfig says how a session's AuthorizationPolicy looks. The policies
// are evaluated by the data plane's Istio gateway, where TLS ends and HTTP
// is visible, never by the server's own pods (docs/security.md, "The Istio
// layer").
type IstioPolicyConfig struct {
	// Namespace holds the policies: the gateway's namespace; empty turns
	// policies off.
	Namespace string
	// Selector selects the gateway's pods.
	Selector map[string]string
	// Port is the port the gateway serves the data plane on: a policy
	// matches nothing else, also where Istio drops its HTTP conditions.
	Port int
	// Issuers are how the data plane's JWT issuers name users, as its
	// AuthenticationConfiguration maps them; each has a user name prefix of
	// its own.
	Issuers []IstioPolicyIssuer
}

// IstioPolicyIssuer is how one JWT issuer of the data plane names users: the
// user name is UsernamePrefix followed by the value of UsernameClaim.
type IstioPolicyIssuer struct {
	URL, UsernameClaim, UsernamePrefix string
}

// PolicyName is the name of a session's AuthorizationPolicy.
func PolicyName(s *v1alpha1.Session) string {
	return "session-" + string(s.UID)
}

// DesiredPolicy is the spec of a session's AuthorizationPolicy: DENY any
// request on the data-plane port to the session's paths, exactly as the
// data plane serves them, unless its JWT comes from the issuer that names
// the owner and carries the owner's name in the claim the server maps. Two
// rules, since a DENY rule matches when all its conditions do: one for
// another issuer, one for another name. An owner no issuer names (a garden
// user) cannot use the data plane: every request to the session is denied.
func DesiredPolicy(s *v1alpha1.Session, cfg IstioPolicyConfig) *securityv1beta1.AuthorizationPolicy {
	path := v1alpha1.DataPlaneSessionPath(s.Namespace, s.Name)
	to := []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{
		Ports: []string{strconv.Itoa(cfg.Port)},
		Paths: []string{path, path + "/*"},
	}}}
	rules := []*securityv1beta1.Rule{{To: to}}
	if issuer, name, ok := cfg.issuerOf(s.Spec.Owner.Username); ok {
		rules = []*securityv1beta1.Rule{
			{To: to, When: []*securityv1beta1.Condition{{Key: "request.auth.claims[iss]", NotValues: []string{issuer.URL}}}},
			{To: to, When: []*securityv1beta1.Condition{{Key: "request.auth.claims[" + issuer.UsernameClaim + "]", NotValues: []string{name}}}},
		}
	}
	return &securityv1beta1.AuthorizationPolicy{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: maps.Clone(cfg.Selector)},
		Action:   securityv1beta1.AuthorizationPolicy_DENY,
		Rules:    rules,
	}
}

// issuerOf finds the issuer whose names the user name is in, and the claim
// value it was mapped from. Prefixes are distinct and none starts another
// (the data plane refuses other configurations), so at most one matches.
func (cfg IstioPolicyConfig) issuerOf(username string) (IstioPolicyIssuer, string, bool) {
	for _, issuer := range cfg.Issuers {
		if name, ok := strings.CutPrefix(username, issuer.UsernamePrefix); ok && name != "" {
			return issuer, name, true
		}
	}
	return IstioPolicyIssuer{}, "", false
}

// observePolicy compares an existing policy with the session's.
func observePolicy(existing *istiosecurityv1.AuthorizationPolicy, s *v1alpha1.Session, cfg IstioPolicyConfig) PolicyState {
	if existing == nil {
		return PolicyState{}
	}
	owned := labels.SelectorFromSet(credentials.Labels(s.Namespace, s.Name)).Matches(labels.Set(existing.Labels))
	return PolicyState{Exists: true, Owned: owned, UpToDate: owned && proto.Equal(&existing.Spec, DesiredPolicy(s, cfg))}
}
