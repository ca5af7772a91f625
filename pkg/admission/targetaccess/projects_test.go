// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package targetaccess

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// nsGrant is a grant of the fake authorizer in one namespace: user may use
// verb on shoots named name there.
type nsGrant struct{ user, verb, name, namespace string }

// nsRBAC is a fake authorizer over nsGrants; it records what it was asked,
// as "<namespace>:<name>".
type nsRBAC struct {
	grants []nsGrant
	asked  []string
}

func (r *nsRBAC) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a.GetNamespace()+":"+a.GetName())
	for _, g := range r.grants {
		if g.user == a.GetUser().GetName() && g.verb == a.GetVerb() && a.GetResource() == v1alpha1.ResourceShoots &&
			g.name == a.GetName() && g.namespace == a.GetNamespace() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// projectNamespaces is a fake Gardener: projects and their namespaces;
// any other project is unknown, and "down" cannot be asked.
type projectNamespaces map[string]string

func (p projectNamespaces) Namespace(_ context.Context, project string) (string, error) {
	if project == "down" {
		return "", &gardener.Error{Reason: gardener.GardenerUnavailable, Err: errors.New("connection refused")}
	}
	if ns, ok := p[project]; ok {
		return ns, nil
	}
	return "", &gardener.Error{Reason: gardener.ProjectNotFound, Err: errors.New("no such project")}
}

// TestProjects: grants on a Shoot count in its project's namespace, so a
// grant for prod of shop never reaches prod of pay; for the default project
// they count in the object's namespace as well, as they did before
// projects were named, unless that namespace is another project's.
func TestProjects(t *testing.T) {
	shootOf := func(project string) clustergate.SessionTarget {
		return clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "prod", Project: project}}
	}
	kubeconfig := func(ns, project string) *clustergate.GardenerClusterKubeconfig {
		return &clustergate.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: ns},
			Spec: clustergate.GardenerClusterKubeconfigSpec{Shoot: clustergate.ShootReference{Name: "prod", Project: project}}}
	}
	grants := []nsGrant{
		{user: "alice", verb: "admin", name: "prod", namespace: "garden-shop"},
		{user: "alice", verb: "debugger", name: "prod/cart", namespace: "garden-shop"},
		{user: "sam", verb: "admin", name: "prod", namespace: "sre"},
		{user: "lee", verb: "admin", name: "prod", namespace: "garden-local"},
		{user: "pat", verb: "admin", name: "prod", namespace: "garden-pay"},
	}
	withGardener := Gardener{DefaultProject: "local", Projects: projectNamespaces{"local": "garden-local", "shop": "garden-shop", "pay": "garden-pay"}}
	tests := []struct {
		name string
		// gardener is withGardener unless set.
		gardener *Gardener
		obj      runtime.Object
		user     string
		// wantErr is in the refusal; wantCode its HTTP code, 403 unless set.
		wantErr   string
		wantCode  int32
		wantAsked []string
	}{
		{name: "a grant in the project's namespace", user: "alice",
			obj: session("sre", alice, "admin", shootOf("shop")), wantAsked: []string{"garden-shop:prod"}},
		{name: "it reaches no Shoot of the same name in another project", user: "alice",
			obj:       session("sre", alice, "admin", shootOf("pay")),
			wantErr:   `may not open "admin" sessions to shoots/pay/prod in namespace sre: that needs the verb "admin" on shoots.clustergate.dev named "prod" in namespace garden-pay`,
			wantAsked: []string{"garden-pay:prod"}},
		{name: "a session in the project's namespace", user: "alice",
			obj: session("garden-shop", alice, "admin", shootOf("shop")), wantAsked: []string{"garden-shop:prod"}},
		{name: "scoped, by namespace of the target, in the project's namespace", user: "alice",
			obj:       scoped(session("sre", alice, "debugger", shootOf("shop")), "cart"),
			wantAsked: []string{"garden-shop:prod", "garden-shop:prod/cart"}},
		{name: "the default project: grants of the session's namespace still count", user: "sam",
			obj: session("sre", alice, "admin", shootOf("local")), wantAsked: []string{"sre:prod"}},
		{name: "the default project: and so do those of its own namespace", user: "lee",
			obj: session("sre", alice, "admin", shootOf("local")), wantAsked: []string{"sre:prod", "garden-local:prod"}},
		{name: "a grant of the session's namespace reaches no other project", user: "sam",
			obj:       session("sre", alice, "admin", shootOf("shop")),
			wantErr:   `named "prod" in namespace garden-shop`,
			wantAsked: []string{"garden-shop:prod"}},
		{name: "a project member's grant reaches not the default project", user: "pat",
			obj:       session("garden-pay", alice, "admin", shootOf("local")),
			wantErr:   `may not open "admin" sessions to shoots/local/prod in namespace garden-pay: that needs the verb "admin" on shoots.clustergate.dev named "prod" in namespace garden-local`,
			wantAsked: []string{"garden-local:prod"}},
		{name: "an unknown project", user: "alice",
			obj:     session("sre", alice, "admin", shootOf("gone")),
			wantErr: `spec.target.shoot.project: Not found: "gone"`, wantCode: 422},
		{name: "Gardener down", user: "alice",
			obj:     session("sre", alice, "admin", shootOf("down")),
			wantErr: `the namespace of Gardener project "down" is unknown`, wantCode: 503},
		{name: "Gardener down: the default project's grants in the session's namespace still count", user: "sam",
			gardener: &Gardener{DefaultProject: "down", Projects: projectNamespaces{}},
			obj:      session("sre", alice, "admin", shootOf("down")), wantAsked: []string{"sre:prod"}},
		{name: "no Gardener: as before projects", user: "sam", gardener: &Gardener{},
			obj: session("sre", alice, "admin", shootOf("")), wantAsked: []string{"sre:prod"}},
		{name: "no Gardener: no project to reach in a project's namespace", user: "pat", gardener: &Gardener{},
			obj:     session("garden-pay", alice, "admin", shootOf("")),
			wantErr: `spec.target.shoot.project: Invalid value: "": the server reaches no Gardener project`, wantCode: 422},
		{name: "a kubeconfig of another project's Shoot", user: "pat",
			obj: kubeconfig("sre", "pay"), wantAsked: []string{"garden-pay:prod"}},
		{name: "a kubeconfig needs the grant in the project's namespace", user: "alice",
			obj:       kubeconfig("sre", "pay"),
			wantErr:   `may not keep a kubeconfig of shoots/pay/prod in namespace sre: that needs the verb "admin" on shoots.clustergate.dev named "prod" in namespace garden-pay`,
			wantAsked: []string{"garden-pay:prod"}},
		{name: "an unknown project of a kubeconfig", user: "alice",
			obj: kubeconfig("sre", "gone"), wantErr: `spec.shoot.project: Not found: "gone"`, wantCode: 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authz := &nsRBAC{grants: grants}
			p := New()
			p.SetUnconditionalAuthorizer(authz)
			g := withGardener
			if tt.gardener != nil {
				g = *tt.gardener
			}
			Initializer{Gardener: g}.Initialize(p)
			if s, ok := tt.obj.(*clustergate.Session); ok {
				// The owner creates it.
				s.Spec.Owner = clustergate.SessionOwner{Username: tt.user}
			}
			obj, _ := meta.Accessor(tt.obj)
			err := p.Validate(context.Background(), request(tt.obj, nil, obj.GetNamespace(), "", admission.Create, &user.DefaultInfo{Name: tt.user}), nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v does not say %q", err, tt.wantErr)
			case tt.wantErr != "":
				var status apierrors.APIStatus
				if !errors.As(err, &status) || status.Status().Code != cmp.Or(tt.wantCode, 403) {
					t.Errorf("error %v, want code %d", err, cmp.Or(tt.wantCode, 403))
				}
			}
			if diff := gocmp.Diff(tt.wantAsked, authz.asked); diff != "" {
				t.Errorf("asked (-want +got):\n%s", diff)
			}
		})
	}
}
