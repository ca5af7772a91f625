// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionowner

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// assigners is a fake authorizer that allows "assign" on sessions to the
// named users in namespace "sre" only.
func assigners(names ...string) authorizer.Authorizer { return allow(v1alpha1.VerbAssign, names...) }

// allow is a fake authorizer that allows verb on sessions to the named users
// in namespace "sre" only.
func allow(verb string, names ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, n := range names {
			if attrs.GetVerb() == verb && attrs.GetResource() == "sessions" && attrs.GetAPIGroup() == clustergate.GroupName &&
				attrs.GetNamespace() == "sre" && attrs.GetUser().GetName() == n {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "no RBAC rule", nil
	})
}

var (
	alice = &user.DefaultInfo{Name: "alice", UID: "uid-alice", Groups: []string{"sre", "system:authenticated"}}
	root  = &user.DefaultInfo{Name: "root", UID: "uid-root", Groups: []string{"admins"}}
)

func attributes(s *clustergate.Session, ns string, u user.Info, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(s, nil, clustergate.Kind("Session").WithVersion("v1alpha1"), ns, s.Name,
		clustergate.Resource("sessions").WithVersion("v1alpha1"), subresource, admission.Create, &metav1.CreateOptions{}, false, u)
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name      string
		requester user.Info
		ns        string
		owner     clustergate.SessionOwner
		want      clustergate.SessionOwner
		forbidden bool
	}{
		{name: "no owner: stamped from the creator", requester: alice, ns: "sre",
			want: clustergate.SessionOwner{Username: "alice", UID: "uid-alice", Groups: []string{"sre", "system:authenticated"}}},
		{name: "self with forged groups: real groups stamped", requester: alice, ns: "sre",
			owner: clustergate.SessionOwner{Username: "alice", Groups: []string{"system:masters"}},
			want:  clustergate.SessionOwner{Username: "alice", UID: "uid-alice", Groups: []string{"sre", "system:authenticated"}}},
		{name: "someone else without assign", requester: alice, ns: "sre",
			owner: clustergate.SessionOwner{Username: "bob"}, forbidden: true},
		{name: "someone else with assign", requester: root, ns: "sre",
			owner: clustergate.SessionOwner{Username: "bob", Groups: []string{"admins"}},
			want:  clustergate.SessionOwner{Username: "bob", Groups: []string{"admins"}}},
		{name: "assign is per namespace", requester: root, ns: "prod",
			owner: clustergate.SessionOwner{Username: "bob"}, forbidden: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetAuthorizer(assigners("root"))
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: tt.ns}, Spec: clustergate.SessionSpec{Owner: tt.owner}}
			a := attributes(s, tt.ns, tt.requester, "")
			err := p.Admit(context.Background(), a, nil)
			if tt.forbidden {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("Admit: got %v, want Forbidden", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if diff := cmp.Diff(tt.want, s.Spec.Owner); diff != "" {
				t.Errorf("owner (-want +got):\n%s", diff)
			}
			if err := p.Validate(context.Background(), a, nil); err != nil {
				t.Errorf("Validate after Admit: %v", err)
			}
		})
	}
}

// TestAssignedOwnerGroups: an assigner vouches only for groups they are in
// themselves, and for no system group but system:authenticated, unless they
// hold "assign-groups"; on the first look (Admit) and on the last (Validate,
// after webhooks).
func TestAssignedOwnerGroups(t *testing.T) {
	// ann is an assigner of the kind an authenticator reports.
	ann := &user.DefaultInfo{Name: "ann", UID: "uid-ann", Groups: []string{"sre", "system:serviceaccounts", "system:authenticated"}}
	tests := []struct {
		name      string
		requester user.Info
		groups    []string
		// want is part of the refusal, empty when allowed.
		want string
	}{
		{name: "no groups", requester: ann},
		{name: "a group the assigner is in", requester: ann, groups: []string{"sre"}},
		{name: "system:authenticated, which the assigner has", requester: ann, groups: []string{"sre", "system:authenticated"}},
		{name: "system:masters", requester: ann, groups: []string{"system:masters"},
			want: `user "ann" may not open a session owned by "bob" with the groups ["system:masters"]: that needs the verb "assign-groups" on sessions in namespace "sre"`},
		{name: "a group the assigner is not in", requester: ann, groups: []string{"sre", "shoot-admins"},
			want: `with the groups ["shoot-admins"]: that needs the verb "assign-groups"`},
		{name: "a system group the assigner is in", requester: ann, groups: []string{"system:serviceaccounts"},
			want: `with the groups ["system:serviceaccounts"]`},
		{name: "every offending group once, in order", requester: ann,
			groups: []string{"system:masters", "sre", "dev", "system:masters", "system:authenticated"},
			want:   `with the groups ["system:masters" "dev"]`},
		{name: "system:authenticated of an assigner without it", requester: &user.DefaultInfo{Name: "ann"}, groups: []string{"system:authenticated"},
			want: `with the groups ["system:authenticated"]`},
		{name: "with assign-groups, system:masters", requester: root, groups: []string{"system:masters"}},
		{name: "with assign-groups, any group", requester: root, groups: []string{"shoot-admins", "system:authenticated"}},
	}
	verbs := map[string][]string{v1alpha1.VerbAssign: {"ann", "root"}, v1alpha1.VerbAssignGroups: {"root"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetAuthorizer(allowVerbs(verbs))
			owner := clustergate.SessionOwner{Username: "bob", UID: "uid-bob", Groups: tt.groups}
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: owner}}
			t.Run("Admit", func(t *testing.T) {
				checkRefusal(t, p.Admit(context.Background(), attributes(s.DeepCopy(), "sre", tt.requester, ""), nil), tt.want)
			})
			// As if a webhook had set the groups after Admit.
			t.Run("Validate", func(t *testing.T) {
				checkRefusal(t, p.Validate(context.Background(), attributes(s.DeepCopy(), "sre", tt.requester, ""), nil), tt.want)
			})
		})
	}
}

// TestOwnGroupsNeedNoAssignGroups: a creator who owns the session is
// stamped with the groups the authenticator reported, system groups
// included, and needs neither "assign" nor "assign-groups".
func TestOwnGroupsNeedNoAssignGroups(t *testing.T) {
	p := New()
	p.SetAuthorizer(assigners())
	admin := &user.DefaultInfo{Name: "admin", UID: "uid-admin", Groups: []string{"system:masters", "system:authenticated"}}
	s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "admin"}}}
	a := attributes(s, "sre", admin, "")
	if err := p.Admit(context.Background(), a, nil); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if err := p.Validate(context.Background(), a, nil); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if diff := cmp.Diff([]string{"system:masters", "system:authenticated"}, s.Spec.Owner.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

func TestValidateCatchesLaterChanges(t *testing.T) {
	p := New()
	p.SetAuthorizer(assigners())
	tests := []struct {
		name  string
		owner clustergate.SessionOwner
	}{
		{name: "owner handed to someone else", owner: clustergate.SessionOwner{Username: "bob"}},
		{name: "groups forged", owner: clustergate.SessionOwner{Username: "alice", UID: "uid-alice", Groups: []string{"system:masters"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: tt.owner}}
			if err := p.Validate(context.Background(), attributes(s, "sre", alice, ""), nil); !apierrors.IsForbidden(err) {
				t.Errorf("Validate: got %v, want Forbidden", err)
			}
		})
	}
}

func TestChangesByOthersNeedRevoke(t *testing.T) {
	owned := func(owner clustergate.SessionOwner) *clustergate.Session {
		return &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: owner}}
	}
	aliceOwns := owned(clustergate.SessionOwner{Username: "alice", UID: "uid-alice"})
	bob := &user.DefaultInfo{Name: "bob"}
	inTerminating := aliceOwns.DeepCopy()
	inTerminating.Namespace = "leaving"
	namespaceController := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:namespace-controller"}
	deleting := metav1.Now()
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "sre"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: &deleting}},
	} {
		if err := namespaces.Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		op          admission.Operation
		subresource string
		// name is the request's; a delete collection has none.
		reqName   string
		session   *clustergate.Session
		requester user.Info
		forbidden bool
	}{
		{name: "owner deletes", op: admission.Delete, reqName: "s", session: aliceOwns, requester: alice},
		{name: "owner updates", op: admission.Update, reqName: "s", session: aliceOwns, requester: alice},
		{name: "someone else deletes", op: admission.Delete, reqName: "s", session: aliceOwns, requester: bob, forbidden: true},
		{name: "someone else updates", op: admission.Update, reqName: "s", session: aliceOwns, requester: bob, forbidden: true},
		{name: "someone else in a delete collection", op: admission.Delete, session: aliceOwns, requester: bob, forbidden: true},
		{name: "someone else writes the status", op: admission.Update, subresource: "status", reqName: "s", session: aliceOwns, requester: bob, forbidden: true},
		{name: "the owner's name with another UID", op: admission.Delete, reqName: "s", session: aliceOwns,
			requester: &user.DefaultInfo{Name: "alice", UID: "uid-new-alice"}, forbidden: true},
		{name: "owner without a UID: the name decides", op: admission.Delete, reqName: "s",
			session: owned(clustergate.SessionOwner{Username: "alice"}), requester: &user.DefaultInfo{Name: "alice", UID: "any"}},
		{name: "revoker deletes", op: admission.Delete, reqName: "s", session: aliceOwns, requester: root},
		{name: "revoker in a delete collection", op: admission.Delete, session: aliceOwns, requester: root},
		{name: "revoker updates", op: admission.Update, reqName: "s", session: aliceOwns, requester: root},
		{name: "revoke is per namespace", op: admission.Delete, reqName: "s", requester: root, forbidden: true,
			session: &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "prod"}, Spec: clustergate.SessionSpec{Owner: aliceOwns.Spec.Owner}}},
		{name: "the namespace controller deletes in a namespace being deleted", op: admission.Delete, session: inTerminating, requester: namespaceController},
		{name: "the namespace controller deletes in a live namespace", op: admission.Delete, session: aliceOwns, requester: namespaceController, forbidden: true},
		{name: "but changes in a namespace being deleted still need revoke", op: admission.Update, reqName: "s", session: inTerminating, requester: bob, forbidden: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetAuthorizer(allow(v1alpha1.VerbRevoke, "root"))
			p.namespaces = corelisters.NewNamespaceLister(namespaces)
			var obj runtime.Object
			var opts runtime.Object = &metav1.DeleteOptions{}
			if tt.op == admission.Update {
				obj, opts = tt.session.DeepCopy(), &metav1.UpdateOptions{}
			}
			a := admission.NewAttributesRecord(obj, tt.session, clustergate.Kind("Session").WithVersion("v1alpha1"), tt.session.Namespace, tt.reqName,
				clustergate.Resource("sessions").WithVersion("v1alpha1"), tt.subresource, tt.op, opts, false, tt.requester)
			if err := p.Admit(context.Background(), a, nil); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			err := p.Validate(context.Background(), a, nil)
			switch {
			case tt.forbidden && !apierrors.IsForbidden(err):
				t.Fatalf("Validate: got %v, want Forbidden", err)
			case tt.forbidden && !strings.Contains(err.Error(), `needs the verb "revoke" on sessions`):
				t.Errorf("the refusal does not name the verb revoke: %v", err)
			case !tt.forbidden && err != nil:
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestIgnoresOtherRequests(t *testing.T) {
	p := New()
	p.SetAuthorizer(assigners())
	s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "bob"}}}
	if err := p.Admit(context.Background(), attributes(s, "sre", alice, "status"), nil); err != nil {
		t.Errorf("status subresource: %v", err)
	}
	if err := p.Validate(context.Background(), attributes(s, "sre", alice, "proxy"), nil); err != nil {
		t.Errorf("proxy subresource: %v", err)
	}
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || !p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Errorf("the plugin must handle create, update and delete only")
	}
}
