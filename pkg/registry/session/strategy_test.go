// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// TestPrepareForCreateFinalizer: a server that runs the session controller
// creates every Session with the controller's finalizer; without the
// controller it adds none, as nothing would release it.
func TestPrepareForCreateFinalizer(t *testing.T) {
	for finalize, want := range map[bool][]string{false: nil, true: {v1alpha1.SessionFinalizer}} {
		s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}}
		NewStrategy(registrytest.Scheme(), validation.DefaultSessionLimits(), finalize, "local").PrepareForCreate(context.Background(), s)
		if diff := cmp.Diff(want, s.Finalizers); diff != "" {
			t.Errorf("controller runs: %v: finalizers (-want +got):\n%s", finalize, diff)
		}
	}
}

// TestSelectableFields: approvers select the sessions whose last request
// waits for them, whichever request it is; a decided one is not selected.
func TestSelectableFields(t *testing.T) {
	approval := func(typ clustergate.SessionApprovalType, d clustergate.ApprovalDecision) clustergate.SessionApproval {
		return clustergate.SessionApproval{Type: typ, Decision: d}
	}
	tests := []struct {
		name      string
		approvals []clustergate.SessionApproval
		selector  string
		want      bool
	}{
		{name: "no approval needed", selector: "status.pendingApproval!=", want: false},
		{name: "opening waits", approvals: []clustergate.SessionApproval{approval(clustergate.ApprovalOpen, clustergate.ApprovalPending)},
			selector: "status.pendingApproval=Open", want: true},
		{name: "opening waits, any request", approvals: []clustergate.SessionApproval{approval(clustergate.ApprovalOpen, clustergate.ApprovalPending)},
			selector: "status.pendingApproval!=", want: true},
		{name: "extension waits", approvals: []clustergate.SessionApproval{
			approval(clustergate.ApprovalOpen, clustergate.ApprovalApproved), approval(clustergate.ApprovalExtend, clustergate.ApprovalPending)},
			selector: "status.pendingApproval=Extend", want: true},
		{name: "extension decided", approvals: []clustergate.SessionApproval{
			approval(clustergate.ApprovalOpen, clustergate.ApprovalApproved), approval(clustergate.ApprovalExtend, clustergate.ApprovalDenied)},
			selector: "status.pendingApproval!=", want: false},
		{name: "by owner and pending", approvals: []clustergate.SessionApproval{approval(clustergate.ApprovalOpen, clustergate.ApprovalPending)},
			selector: "spec.owner.username=alice,status.pendingApproval=Open", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "alice"}},
				Status: clustergate.SessionStatus{Approvals: tt.approvals}}
			sel, err := fields.ParseSelector(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(SelectableFields(s)); got != tt.want {
				t.Errorf("%s matches %v, want %v", tt.selector, got, tt.want)
			}
		})
	}
}

// TestTableScope: -o wide shows a scoped session's namespaces in SCOPE, and
// "*" for a session that reaches its whole target.
func TestTableScope(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	session := func(name string, scope *clustergate.SessionScope) clustergate.Session {
		return clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Spec: clustergate.SessionSpec{Owner: clustergate.SessionOwner{Username: "alice"}, AccessLevel: clustergate.AccessLevel{Group: "debugger"},
				Target: clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "prod"}}, Scope: scope}}
	}
	list := &clustergate.SessionList{Items: []clustergate.Session{
		session("shop", &clustergate.SessionScope{Namespaces: []string{"shop", "shop-db"}}),
		session("whole", nil),
	}}
	table, err := NewTableConvertor(func() time.Time { return now }).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope := slices.IndexFunc(table.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "Scope" })
	if scope < 0 || table.ColumnDefinitions[scope].Priority != 1 {
		t.Fatalf("columns %+v have no Scope of priority 1", table.ColumnDefinitions)
	}
	var got []any
	for _, row := range table.Rows {
		got = append(got, row.Cells[scope])
	}
	if diff := cmp.Diff([]any{"shop,shop-db", "*"}, got); diff != "" {
		t.Errorf("scope cells (-want +got):\n%s", diff)
	}
}

// TestShootProject: a Shoot target is stored with its project: the one
// named, else the namespace's project in garden-<project>, else the
// server's; an update that names none keeps the stored one.
func TestShootProject(t *testing.T) {
	st := NewStrategy(registrytest.Scheme(), validation.DefaultSessionLimits(), false, "local")
	tests := []struct{ name, namespace, project, want string }{
		{name: "the server's default", namespace: "sre", want: "local"},
		{name: "the namespace's project", namespace: "garden-shop", want: "shop"},
		{name: "named", namespace: "garden-shop", project: "pay", want: "pay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: tt.namespace},
				Spec: clustergate.SessionSpec{Target: clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "prod", Project: tt.project}}}}
			st.PrepareForCreate(context.Background(), s)
			if got := s.Spec.Target.Shoot.Project; got != tt.want {
				t.Fatalf("created with project %q, want %q", got, tt.want)
			}
			update := s.DeepCopy()
			update.Spec.Target.Shoot.Project = ""
			st.PrepareForUpdate(context.Background(), update, s)
			if got := update.Spec.Target.Shoot.Project; got != tt.want {
				t.Errorf("updated without a project to %q, want %q kept", got, tt.want)
			}
			if got := Target(&s.Spec.Target); got != "shoot/"+tt.want+"/prod" {
				t.Errorf("TARGET column %q", got)
			}
		})
	}
}
