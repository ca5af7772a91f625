package session

import (
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/dataplane"
)

// PolicyConfig says how a session's AuthorizationPolicy looks.
type PolicyConfig struct {
	// Namespace holds the policies; empty turns policies off.
	Namespace string
	// Selector selects the server's pods.
	Selector map[string]string
	// PrincipalFormat builds the owner's request principal; "{username}" is
	// replaced by the owner's user name.
	PrincipalFormat string
}

// PolicyName is the name of a session's AuthorizationPolicy.
func PolicyName(s *v1alpha1.Session) string {
	return "session-" + string(s.UID)
}

// DesiredPolicy is the spec of a session's AuthorizationPolicy: DENY any
// request to the session's path on the data plane from anyone but its
// owner.
func DesiredPolicy(s *v1alpha1.Session, cfg PolicyConfig) *securityv1beta1.AuthorizationPolicy {
	principal := strings.ReplaceAll(cfg.PrincipalFormat, "{username}", s.Spec.Owner.Username)
	return &securityv1beta1.AuthorizationPolicy{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: maps.Clone(cfg.Selector)},
		Action:   securityv1beta1.AuthorizationPolicy_DENY,
		Rules: []*securityv1beta1.Rule{{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{NotRequestPrincipals: []string{principal}}}},
			To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: []string{dataplane.SessionPath(s.Namespace, s.Name) + "*"}}}},
		}},
	}
}

// observePolicy compares an existing policy with the session's.
func observePolicy(existing *istiosecurityv1.AuthorizationPolicy, s *v1alpha1.Session, cfg PolicyConfig) PolicyState {
	if existing == nil {
		return PolicyState{}
	}
	owned := labels.SelectorFromSet(credentials.Labels(s.Namespace, s.Name)).Matches(labels.Set(existing.Labels))
	return PolicyState{Exists: true, Owned: owned, UpToDate: owned && proto.Equal(&existing.Spec, DesiredPolicy(s, cfg))}
}
