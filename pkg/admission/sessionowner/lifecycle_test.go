// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionowner

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// allowVerbs is a fake authorizer that allows each verb on sessions to its
// users, in namespace "sre" only.
func allowVerbs(verbs map[string][]string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		return allow(attrs.GetVerb(), verbs[attrs.GetVerb()]...).Authorize(ctx, attrs)
	})
}

// updateOf returns the attributes of an update of session s through subresource.
func updateOf(s *clustergate.Session, u user.Info, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(s.DeepCopy(), s, clustergate.Kind("Session").WithVersion("v1alpha1"), s.Namespace, s.Name,
		clustergate.Resource("sessions").WithVersion("v1alpha1"), subresource, admission.Update, &metav1.UpdateOptions{}, false, u)
}

func TestApproval(t *testing.T) {
	pending := func(requestedBy string) *clustergate.Session {
		return &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"},
			Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "alice", UID: "uid-alice"}},
			Status: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{{
				Type: clustergate.ApprovalOpen, RequestedBy: requestedBy, Decision: clustergate.ApprovalPending}}}}
	}
	inProd := pending("alice")
	inProd.Namespace = "prod"
	bob := &user.DefaultInfo{Name: "bob"}
	// underPolicy is alice's session, she in team-shop, under a policy
	// of two approvers from shop-oncall, none of the owner's team.
	underPolicy := func(decidedBy ...string) *clustergate.Session {
		s := pending("alice")
		s.Spec.Owner.Groups = []string{"team-shop", "system:authenticated"}
		s.Status.ApprovalPolicy = &clustergate.AppliedApprovalPolicy{Name: "shop-admin", ApprovalRequired: true,
			Approvers: &clustergate.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}, ExcludeOwnerGroups: []string{"team-shop"}}}
		a := &s.Status.Approvals[0]
		a.Policy, a.Required = "shop-admin", 2
		for _, name := range decidedBy {
			a.Decisions = append(a.Decisions, clustergate.ApproverDecision{Approver: name, Decision: clustergate.ApprovalApproved})
		}
		return s
	}
	oncall := func(name string, groups ...string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: append([]string{"shop-oncall"}, groups...)}
	}
	tests := []struct {
		name      string
		session   *clustergate.Session
		requester user.Info
		// want is part of the refusal, empty when allowed.
		want string
	}{
		{name: "an approver", session: pending("alice"), requester: bob},
		{name: "the owner, though an approver", session: pending("alice"), requester: alice, want: "their own session"},
		{name: "the owner's name with another UID", session: pending("alice"), requester: &user.DefaultInfo{Name: "alice", UID: "uid-new"},
			want: "their own session"},
		{name: "the approver who asked for it", session: pending("bob"), requester: bob, want: "a request they made"},
		{name: "without approve", session: pending("alice"), requester: root, want: `needs the verb "approve" on sessions`},
		{name: "approve is per namespace", session: inProd, requester: bob, want: `needs the verb "approve"`},
		{name: "policy: an approver of its group", session: underPolicy(), requester: oncall("bob")},
		{name: "policy: the second approver", session: underPolicy("bob"), requester: oncall("carol")},
		{name: "policy: the owner, though in its group", session: underPolicy(), requester: oncall("alice"), want: "their own session"},
		{name: "policy: not in its users or groups", session: underPolicy(), requester: &user.DefaultInfo{Name: "dave", Groups: []string{"sre"}},
			want: `user "dave" may not approve or deny session sre/s: SessionApprovalPolicy "shop-admin" lets only the members of the groups ["shop-oncall"] decide`},
		{name: "policy: shares an excluded group with the owner", session: underPolicy(), requester: oncall("erin", "team-shop"),
			want: `SessionApprovalPolicy "shop-admin" refuses approvers who share the group "team-shop" with the owner "alice"`},
		{name: "policy: the same approver twice", session: underPolicy("bob"), requester: oncall("bob"),
			want: `user "bob" already decided on the pending request of session sre/s: it needs 2 distinct approvers`},
		{name: "policy: still needs the verb approve", session: underPolicy(), requester: oncall("root"), want: `needs the verb "approve"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetAuthorizer(allowVerbs(map[string][]string{v1alpha1.VerbApprove: {"alice", "bob", "carol", "dave", "erin"}, v1alpha1.VerbRevoke: {"root"}}))
			err := p.Validate(context.Background(), updateOf(tt.session, tt.requester, "approval"), nil)
			checkRefusal(t, err, tt.want)
		})
	}
}

func TestExtension(t *testing.T) {
	owned := func(groups ...string) *clustergate.Session {
		return &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"},
			Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "alice", UID: "uid-alice", Groups: groups}}}
	}
	aliceOwns := owned()
	// Groups root is not in: opening it for alice took "assign-groups".
	withForeignGroups := owned("sre", "system:masters")
	assignExtend := map[string][]string{v1alpha1.VerbExtend: {"alice", "root"}, v1alpha1.VerbAssign: {"root"}}
	tests := []struct {
		name      string
		verbs     map[string][]string
		requester user.Info
		// session is aliceOwns unless set.
		session *clustergate.Session
		want    string
	}{
		{name: "the owner with extend", verbs: map[string][]string{v1alpha1.VerbExtend: {"alice"}}, requester: alice},
		{name: "the owner without extend", verbs: map[string][]string{v1alpha1.VerbAssign: {"alice"}}, requester: alice, want: `needs the verb "extend"`},
		{name: "an assigner with extend", verbs: map[string][]string{v1alpha1.VerbExtend: {"root"}, v1alpha1.VerbAssign: {"root"}}, requester: root},
		{name: "someone with extend only", verbs: map[string][]string{v1alpha1.VerbExtend: {"root"}}, requester: root, want: `needs the verb "assign" on sessions in namespace "sre" too`},
		{name: "revoke is not enough", verbs: map[string][]string{v1alpha1.VerbRevoke: {"root"}}, requester: root, want: `needs the verb "extend"`},
		{name: "the owner with groups of their own", verbs: assignExtend, requester: alice, session: withForeignGroups},
		{name: "an assigner, groups they are not in", verbs: assignExtend, requester: root, session: withForeignGroups,
			want: `user "root" may not extend a session owned by "alice" with the groups ["sre" "system:masters"]: that needs the verb "assign-groups"`},
		{name: "an assigner with assign-groups", requester: root, session: withForeignGroups,
			verbs: map[string][]string{v1alpha1.VerbExtend: {"root"}, v1alpha1.VerbAssign: {"root"}, v1alpha1.VerbAssignGroups: {"root"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetAuthorizer(allowVerbs(tt.verbs))
			s := tt.session
			if s == nil {
				s = aliceOwns
			}
			err := p.Validate(context.Background(), updateOf(s, tt.requester, "extension"), nil)
			checkRefusal(t, err, tt.want)
		})
	}
}

// checkRefusal wants err nil when want is empty, else a Forbidden that says want.
func checkRefusal(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("Validate: %v", err)
	case want != "" && !apierrors.IsForbidden(err):
		t.Fatalf("Validate: got %v, want Forbidden", err)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("the refusal %q does not say %q", err, want)
	}
}
