// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package targetaccess

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// grant is one RBAC-like rule of the fake authorizer: a subject (user or
// group) may use verb on resource, on every name when name is empty, in
// namespace "sre".
type grant struct{ subject, verb, resource, name string }

// rbac is a fake authorizer over grants; it records what it was asked.
type rbac struct {
	grants []grant
	asked  []authorizer.Attributes
	err    error
}

func (r *rbac) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a)
	if r.err != nil {
		return authorizer.DecisionNoOpinion, "", r.err
	}
	if a.GetAPIGroup() != clustergate.GroupName || a.GetNamespace() != "sre" || !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	subjects := append([]string{a.GetUser().GetName()}, a.GetUser().GetGroups()...)
	for _, g := range r.grants {
		for _, s := range subjects {
			if g.subject == s && g.verb == a.GetVerb() && g.resource == a.GetResource() && (g.name == "" || g.name == a.GetName()) {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func session(ns string, owner clustergate.SessionOwner, group string, target clustergate.SessionTarget) *clustergate.Session {
	return &clustergate.Session{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
		Spec:       clustergate.SessionSpec{Owner: owner, AccessLevel: clustergate.AccessLevel{Group: group}, Target: target},
	}
}

var (
	shoot   = clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "local"}}
	cluster = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"}}}
	alice   = clustergate.SessionOwner{Username: "alice", UID: "uid-alice", Groups: []string{"sre", "system:authenticated"}}
)

func TestSessions(t *testing.T) {
	grants := []grant{
		{subject: "sre", verb: "viewer", resource: v1alpha1.ResourceShoots},
		{subject: "alice", verb: "admin", resource: v1alpha1.ResourceShoots, name: "other"},
		{subject: "bob", verb: "admin", resource: v1alpha1.ResourceClusters, name: "mc-1"},
		// As kube-apiserver's authorizers allow system:masters everything.
		{subject: "system:masters", verb: "admin", resource: v1alpha1.ResourceShoots},
		{subject: "system:masters", verb: "admin", resource: v1alpha1.ResourceClusters},
	}
	// root may assign (SessionOwner's business) but holds no target.
	root := &user.DefaultInfo{Name: "root", UID: "uid-root", Groups: []string{"admins", "system:authenticated"}}
	tests := []struct {
		name    string
		session *clustergate.Session
		// requester creates the session, the owner unless set: admission
		// judges the owner, and a requester who is someone else too.
		requester user.Info
		wantErr   string
		// wantAsked is how often the authorizer is asked, once unless set.
		wantAsked int
	}{
		{name: "viewer on every shoot through a group", session: session("sre", alice, "viewer", shoot)},
		{name: "admin on another shoot only", session: session("sre", alice, "admin", shoot),
			wantErr: `user "alice" may not open "admin" sessions to shoots/local in namespace sre: that needs the verb "admin" on shoots.clustergate.dev named "local"`},
		{name: "a shoot grant is no cluster grant", session: session("sre", alice, "viewer", cluster),
			wantErr: `user "alice" may not open "viewer" sessions to clusters/mc-1 in namespace sre`},
		{name: "cluster by its Secret's name", session: session("sre", clustergate.SessionOwner{Username: "bob"}, "admin", cluster)},
		{name: "grants are per namespace", session: session("prod", alice, "viewer", shoot),
			wantErr: `may not open "viewer" sessions to shoots/local in namespace prod`},
		{name: "the assigned owner is judged, not only the assigner", requester: &user.DefaultInfo{Name: "root", Groups: []string{"sre"}},
			session: session("sre", clustergate.SessionOwner{Username: "carol"}, "viewer", shoot),
			wantErr: `user "carol" may not open "viewer" sessions to shoots/local`},
		{name: "the assigned owner's groups count, with an assigner who holds the grant", requester: &user.DefaultInfo{Name: "root", Groups: []string{"sre"}},
			session: session("sre", clustergate.SessionOwner{Username: "carol", Groups: []string{"sre"}}, "viewer", shoot), wantAsked: 2},
		{name: "an assigner without the grant", requester: root,
			session:   session("sre", clustergate.SessionOwner{Username: "carol", Groups: []string{"sre"}}, "viewer", shoot),
			wantErr:   `user "root" may not open "viewer" sessions to shoots/local in namespace sre for "carol": that needs the verb "viewer" on shoots.clustergate.dev named "local"`,
			wantAsked: 2},
		{name: "an assigner claiming system:masters for the owner", requester: root,
			session:   session("sre", clustergate.SessionOwner{Username: "root-too", Groups: []string{"system:masters"}}, "admin", cluster),
			wantErr:   `user "root" may not open "admin" sessions to clusters/mc-1 in namespace sre for "root-too": that needs the verb "admin" on clusters.clustergate.dev named "mc-1"`,
			wantAsked: 2},
		{name: "an assigner who holds the access level themselves", requester: &user.DefaultInfo{Name: "bob"},
			session: session("sre", clustergate.SessionOwner{Username: "carol", Groups: []string{"system:masters"}}, "admin", cluster), wantAsked: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authz := &rbac{grants: grants}
			p := New()
			p.SetUnconditionalAuthorizer(authz)
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			requester := tt.requester
			if requester == nil {
				requester = &user.DefaultInfo{Name: tt.session.Spec.Owner.Username, UID: tt.session.Spec.Owner.UID, Groups: tt.session.Spec.Owner.Groups}
			}
			err := p.Validate(context.Background(), request(tt.session, nil, tt.session.Namespace, "", admission.Create, requester), nil)
			checkErr(t, err, tt.wantErr)
			wantAsked := max(tt.wantAsked, 1)
			if len(authz.asked) != wantAsked {
				t.Fatalf("asked the authorizer %d times, want %d", len(authz.asked), wantAsked)
			}
			if got := authz.asked[0].GetUser().GetUID(); got != tt.session.Spec.Owner.UID {
				t.Errorf("asked for UID %q, want the owner's %q", got, tt.session.Spec.Owner.UID)
			}
		})
	}
}

// scoped returns s scoped to namespaces of its target.
func scoped(s *clustergate.Session, namespaces ...string) *clustergate.Session {
	s.Spec.Scope = &clustergate.SessionScope{Namespaces: namespaces}
	return s
}

// TestScopedSessions: a scoped session is allowed by the level's verb on
// the whole target, or on "<target>/<namespace>" for each of its
// namespaces; a namespace grant never allows an unscoped session, and the
// refusal names the namespaces missing and the rule that would allow them.
func TestScopedSessions(t *testing.T) {
	prod := clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "prod"}}
	grants := []grant{
		{subject: "alice", verb: "debugger", resource: v1alpha1.ResourceShoots, name: "prod/shop"},
		{subject: "alice", verb: "debugger", resource: v1alpha1.ResourceShoots, name: "prod/shop-db"},
		{subject: "alice", verb: "debugger", resource: v1alpha1.ResourceClusters, name: "mc-1/shop"},
		{subject: "sre", verb: "viewer", resource: v1alpha1.ResourceShoots},
		{subject: "bob", verb: "debugger", resource: v1alpha1.ResourceShoots, name: "prod"},
		{subject: "root", verb: "debugger", resource: v1alpha1.ResourceShoots, name: "prod/shop"},
	}
	bob := clustergate.SessionOwner{Username: "bob"}
	root := &user.DefaultInfo{Name: "root", Groups: []string{"admins"}}
	tests := []struct {
		name      string
		session   *clustergate.Session
		requester user.Info
		wantErr   string
		// wantAsked are the names the authorizer is asked about, in order.
		wantAsked []string
	}{
		{name: "a namespace grant", session: scoped(session("sre", alice, "debugger", prod), "shop"),
			wantAsked: []string{"prod", "prod/shop"}},
		{name: "a grant for each namespace", session: scoped(session("sre", alice, "debugger", prod), "shop", "shop-db"),
			wantAsked: []string{"prod", "prod/shop", "prod/shop-db"}},
		{name: "one namespace granted, one not", session: scoped(session("sre", alice, "debugger", prod), "shop", "cart"),
			wantErr:   `user "alice" may not open "debugger" sessions to namespace cart of shoots/prod in namespace sre: that needs the verb "debugger" on shoots.clustergate.dev named "prod", or named "prod/cart", in namespace sre`,
			wantAsked: []string{"prod", "prod/shop", "prod/cart"}},
		{name: "no namespace granted", session: scoped(session("sre", alice, "debugger", prod), "cart", "web"),
			wantErr:   `user "alice" may not open "debugger" sessions to namespaces cart, web of shoots/prod in namespace sre: that needs the verb "debugger" on shoots.clustergate.dev named "prod", or named "prod/cart" and "prod/web", in namespace sre`,
			wantAsked: []string{"prod", "prod/cart", "prod/web"}},
		{name: "namespace grants never open the whole target", session: session("sre", alice, "debugger", prod),
			wantErr:   `user "alice" may not open "debugger" sessions to shoots/prod in namespace sre: that needs the verb "debugger" on shoots.clustergate.dev named "prod"`,
			wantAsked: []string{"prod"}},
		{name: "a namespace grant is for one target", session: scoped(session("sre", alice, "debugger", shoot), "shop"),
			wantErr:   `may not open "debugger" sessions to namespace shop of shoots/local in namespace sre: that needs the verb "debugger" on shoots.clustergate.dev named "local", or named "local/shop", in namespace sre`,
			wantAsked: []string{"local", "local/shop"}},
		{name: "a namespace grant of a cluster", session: scoped(session("sre", alice, "debugger", cluster), "shop"),
			wantAsked: []string{"mc-1", "mc-1/shop"}},
		{name: "a namespace grant is for one access level", session: scoped(session("sre", alice, "admin", prod), "shop"),
			wantErr:   `may not open "admin" sessions to namespace shop of shoots/prod`,
			wantAsked: []string{"prod", "prod/shop"}},
		{name: "a whole-target grant covers every namespace", session: scoped(session("sre", bob, "debugger", prod), "shop", "cart"),
			wantAsked: []string{"prod"}},
		{name: "a grant on every shoot covers every namespace", session: scoped(session("sre", alice, "viewer", prod), "shop"),
			wantAsked: []string{"prod"}},
		{name: "an assigner granted in the namespace", requester: root, session: scoped(session("sre", alice, "debugger", prod), "shop"),
			wantAsked: []string{"prod", "prod/shop", "prod", "prod/shop"}},
		{name: "an assigner not granted in every namespace", requester: root, session: scoped(session("sre", alice, "debugger", prod), "shop", "shop-db"),
			wantErr:   `user "root" may not open "debugger" sessions to namespace shop-db of shoots/prod in namespace sre for "alice": that needs the verb "debugger" on shoots.clustergate.dev named "prod", or named "prod/shop-db", in namespace sre`,
			wantAsked: []string{"prod", "prod/shop", "prod/shop-db", "prod", "prod/shop", "prod/shop-db"}},
		{name: "an assigner granted for an owner who is not", requester: root, session: scoped(session("sre", clustergate.SessionOwner{Username: "carol"}, "debugger", prod), "shop"),
			wantErr:   `user "carol" may not open "debugger" sessions to namespace shop of shoots/prod in namespace sre: that needs`,
			wantAsked: []string{"prod", "prod/shop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authz := &rbac{grants: grants}
			p := New()
			p.SetUnconditionalAuthorizer(authz)
			requester := tt.requester
			if requester == nil {
				requester = &user.DefaultInfo{Name: tt.session.Spec.Owner.Username, UID: tt.session.Spec.Owner.UID, Groups: tt.session.Spec.Owner.Groups}
			}
			err := p.Validate(context.Background(), request(tt.session, nil, tt.session.Namespace, "", admission.Create, requester), nil)
			checkErr(t, err, tt.wantErr)
			var asked []string
			for _, a := range authz.asked {
				asked = append(asked, a.GetName())
			}
			if diff := cmp.Diff(tt.wantAsked, asked); diff != "" {
				t.Errorf("names asked about (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeconfigs(t *testing.T) {
	kubeconfig := func(shoot, secret string) *clustergate.GardenerClusterKubeconfig {
		return &clustergate.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "sre"},
			Spec: clustergate.GardenerClusterKubeconfigSpec{Shoot: clustergate.ShootReference{Name: shoot},
				Kubeconfig: clustergate.KubeconfigTarget{Secret: clustergate.SecretKeyReference{Name: secret}}}}
	}
	grants := []grant{{subject: "admins", verb: "admin", resource: v1alpha1.ResourceShoots, name: "local"}, {subject: "viewers", verb: "viewer", resource: v1alpha1.ResourceShoots},
		{subject: "shop-admins", verb: "admin", resource: v1alpha1.ResourceShoots, name: "local/shop"}}
	admin := &user.DefaultInfo{Name: "ann", Groups: []string{"admins"}}
	viewer := &user.DefaultInfo{Name: "vic", Groups: []string{"viewers"}}
	tests := []struct {
		name      string
		op        admission.Operation
		obj, old  *clustergate.GardenerClusterKubeconfig
		requester user.Info
		wantErr   string
		wantAsked int
	}{
		{name: "create with admin on the shoot", op: admission.Create, obj: kubeconfig("local", "kc"), requester: admin, wantAsked: 1},
		{name: "create with viewer only", op: admission.Create, obj: kubeconfig("local", "kc"), requester: viewer, wantAsked: 1,
			wantErr: `user "vic" may not keep a kubeconfig of shoots/local in namespace sre: that needs the verb "admin" on shoots.clustergate.dev named "local"`},
		{name: "admin on another shoot", op: admission.Create, obj: kubeconfig("other", "kc"), requester: admin, wantAsked: 1,
			wantErr: `may not keep a kubeconfig of shoots/other`},
		{name: "spec change to another shoot", op: admission.Update, old: kubeconfig("local", "kc"), obj: kubeconfig("other", "kc"), requester: admin, wantAsked: 1,
			wantErr: `may not keep a kubeconfig of shoots/other`},
		{name: "spec change of the Secret is judged too", op: admission.Update, old: kubeconfig("local", "kc"), obj: kubeconfig("local", "kc2"), requester: viewer, wantAsked: 1,
			wantErr: `may not keep a kubeconfig of shoots/local`},
		{name: "a namespace grant is no kubeconfig grant", op: admission.Create, obj: kubeconfig("local", "kc"), wantAsked: 1,
			requester: &user.DefaultInfo{Name: "nan", Groups: []string{"shop-admins"}},
			wantErr:   `user "nan" may not keep a kubeconfig of shoots/local in namespace sre: that needs the verb "admin" on shoots.clustergate.dev named "local"`},
		{name: "metadata change needs nothing", op: admission.Update, old: kubeconfig("local", "kc"), obj: kubeconfig("local", "kc"), requester: viewer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authz := &rbac{grants: grants}
			p := New()
			p.SetUnconditionalAuthorizer(authz)
			var old runtime.Object
			if tt.old != nil {
				old = tt.old
			}
			err := p.Validate(context.Background(), request(tt.obj, old, "sre", "", tt.op, tt.requester), nil)
			checkErr(t, err, tt.wantErr)
			if len(authz.asked) != tt.wantAsked {
				t.Errorf("asked the authorizer %d times, want %d", len(authz.asked), tt.wantAsked)
			}
		})
	}
}

// TestExtensionNeedsTheTargetStill: an owner who lost the grant on the
// target since the session was opened may not extend it, and someone else
// extends it only holding the access level themselves, as opening it for
// the owner would need.
func TestExtensionNeedsTheTargetStill(t *testing.T) {
	owner := &user.DefaultInfo{Name: "alice", UID: "uid-alice", Groups: []string{"sre"}}
	tests := []struct {
		name, group string
		scope       []string
		requester   user.Info
		want        string
	}{
		{name: "the owner, still granted", group: "viewer", requester: owner},
		{name: "the owner, not granted", group: "admin", requester: owner,
			want: `user "alice" may not open "admin" sessions to shoots/local`},
		{name: "an assigner granted", group: "viewer", requester: &user.DefaultInfo{Name: "root", Groups: []string{"sre"}}},
		{name: "an assigner not granted", group: "viewer", requester: &user.DefaultInfo{Name: "root", Groups: []string{"admins"}},
			want: `user "root" may not open "viewer" sessions to shoots/local in namespace sre for "alice"`},
		{name: "the owner, still granted in the namespace", group: "debugger", scope: []string{"shop"}, requester: owner},
		{name: "the owner, no longer granted in a namespace", group: "debugger", scope: []string{"shop", "cart"}, requester: owner,
			want: `user "alice" may not open "debugger" sessions to namespace cart of shoots/local`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetUnconditionalAuthorizer(&rbac{grants: []grant{{subject: "sre", verb: "viewer", resource: v1alpha1.ResourceShoots},
				{subject: "sre", verb: "debugger", resource: v1alpha1.ResourceShoots, name: "local/shop"}}})
			s := session("sre", alice, tt.group, shoot)
			if tt.scope != nil {
				s = scoped(s, tt.scope...)
			}
			err := p.Validate(context.Background(), request(s, s, "sre", "extension", admission.Update, tt.requester), nil)
			checkErr(t, err, tt.want)
		})
	}
}

func TestAuthorizerFailureRefuses(t *testing.T) {
	for _, s := range []*clustergate.Session{session("sre", alice, "viewer", shoot), scoped(session("sre", alice, "viewer", shoot), "shop")} {
		p := New()
		p.SetUnconditionalAuthorizer(&rbac{err: errors.New("webhook down")})
		err := p.Validate(context.Background(), request(s, nil, "sre", "", admission.Create, &user.DefaultInfo{Name: "alice"}), nil)
		checkErr(t, err, "authorization failed: webhook down")
	}
}

func TestIgnoresOtherRequests(t *testing.T) {
	authz := &rbac{}
	p := New()
	p.SetUnconditionalAuthorizer(authz)
	s := session("sre", alice, "admin", shoot)
	for _, a := range []admission.Attributes{
		request(s, s, "sre", "", admission.Update, &user.DefaultInfo{Name: "alice"}),
		request(s, nil, "sre", "status", admission.Create, &user.DefaultInfo{Name: "alice"}),
	} {
		if err := p.Validate(context.Background(), a, nil); err != nil {
			t.Errorf("%s %s: %v", a.GetOperation(), a.GetSubresource(), err)
		}
	}
	if len(authz.asked) != 0 {
		t.Errorf("asked the authorizer %d times, want never", len(authz.asked))
	}
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("the plugin must handle create and update only")
	}
}

func request(obj, old runtime.Object, ns, subresource string, op admission.Operation, u user.Info) admission.Attributes {
	resource, kind := "sessions", "Session"
	if _, ok := obj.(*clustergate.GardenerClusterKubeconfig); ok {
		resource, kind = "gardenerclusterkubeconfigs", "GardenerClusterKubeconfig"
	}
	var opts runtime.Object = &metav1.CreateOptions{}
	if op == admission.Update {
		opts = &metav1.UpdateOptions{}
	}
	return admission.NewAttributesRecord(obj, old, clustergate.Kind(kind).WithVersion("v1alpha1"), ns, "name",
		clustergate.Resource(resource).WithVersion("v1alpha1"), subresource, op, opts, false, u)
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("got %v, want no error", err)
	case want != "" && !apierrors.IsForbidden(err):
		t.Fatalf("got %v, want Forbidden", err)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not say %q", err, want)
	}
}
