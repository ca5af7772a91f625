package sessionowner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// assigners is a fake authorizer that allows "assign" on sessions to the
// named users in namespace "sre" only.
func assigners(names ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, n := range names {
			if attrs.GetVerb() == VerbAssign && attrs.GetResource() == "sessions" && attrs.GetAPIGroup() == clustergate.GroupName &&
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
			owner: clustergate.SessionOwner{Username: "bob", Groups: []string{"dev"}},
			want:  clustergate.SessionOwner{Username: "bob", Groups: []string{"dev"}}},
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

func TestIgnoresOtherRequests(t *testing.T) {
	p := New()
	p.SetAuthorizer(assigners())
	s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "bob"}}}
	if err := p.Admit(context.Background(), attributes(s, "sre", alice, "status"), nil); err != nil {
		t.Errorf("status subresource: %v", err)
	}
	if p.Handles(admission.Update) || p.Handles(admission.Delete) || !p.Handles(admission.Create) {
		t.Errorf("the plugin must handle create only")
	}
}
