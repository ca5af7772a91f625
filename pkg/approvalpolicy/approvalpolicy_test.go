// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package approvalpolicy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func policy(name string, edit func(*clustergate.SessionApprovalPolicySpec)) clustergate.SessionApprovalPolicy {
	p := clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	edit(&p.Spec)
	return p
}

func shopSession(level string) *clustergate.Session {
	return &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shop"},
		Spec: clustergate.SessionSpec{AccessLevel: clustergate.AccessLevel{Group: level},
			Owner:  clustergate.SessionOwner{Username: "alice", Groups: []string{"oncall"}},
			Target: clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "prod"}}}}
}

func TestMatches(t *testing.T) {
	scoped := shopSession("admin")
	scoped.Spec.Scope = &clustergate.SessionScope{Namespaces: []string{"web"}}
	cluster := shopSession("admin")
	cluster.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "prod"}}}
	inProject := func(project string) *clustergate.Session {
		s := shopSession("admin")
		s.Spec.Target.Shoot.Project = project
		return s
	}
	shoot := func(name string) clustergate.SessionLockTarget {
		return clustergate.SessionLockTarget{Shoot: &clustergate.ShootReference{Name: name}}
	}
	tests := []struct {
		name     string
		selector clustergate.SessionSelector
		session  *clustergate.Session
		want     bool
	}{
		{name: "empty selects all", session: shopSession("admin"), want: true},
		{name: "namespace", selector: clustergate.SessionSelector{Namespaces: []string{"ops", "shop"}}, session: shopSession("admin"), want: true},
		{name: "other namespace", selector: clustergate.SessionSelector{Namespaces: []string{"ops"}}, session: shopSession("admin")},
		{name: "shoot", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{shoot("prod")}}, session: shopSession("admin"), want: true},
		{name: "other shoot", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{shoot("dev")}}, session: shopSession("admin")},
		{name: "a shoot of the session's project", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{
			{Shoot: &clustergate.ShootReference{Name: "prod", Project: "shop"}}}}, session: inProject("shop"), want: true},
		{name: "a shoot of another project", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{
			{Shoot: &clustergate.ShootReference{Name: "prod", Project: "pay"}}}}, session: inProject("shop")},
		{name: "a shoot of no project: of every project", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{shoot("prod")}},
			session: inProject("pay"), want: true},
		{name: "a shoot is no cluster of its name", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{shoot("prod")}}, session: cluster},
		{name: "cluster", selector: clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{{Cluster: &clustergate.LocalSecretReference{Name: "prod"}}}},
			session: cluster, want: true},
		{name: "access level", selector: clustergate.SessionSelector{AccessLevels: []string{"admin"}}, session: shopSession("admin"), want: true},
		{name: "other access level", selector: clustergate.SessionSelector{AccessLevels: []string{"admin"}}, session: shopSession("viewer")},
		{name: "scoped only", selector: clustergate.SessionSelector{Scoped: ptr.To(true)}, session: scoped, want: true},
		{name: "scoped only, whole target", selector: clustergate.SessionSelector{Scoped: ptr.To(true)}, session: shopSession("admin")},
		{name: "whole target only, scoped", selector: clustergate.SessionSelector{Scoped: ptr.To(false)}, session: scoped},
		{name: "all must match", selector: clustergate.SessionSelector{Namespaces: []string{"shop"}, AccessLevels: []string{"viewer"}}, session: shopSession("admin")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := clustergate.SessionApprovalPolicy{Spec: clustergate.SessionApprovalPolicySpec{Sessions: tt.selector}}
			if got := Matches(&p, tt.session); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGoverning(t *testing.T) {
	open := policy("a-open", func(*clustergate.SessionApprovalPolicySpec) {})
	one := policy("z-one", func(s *clustergate.SessionApprovalPolicySpec) { s.ApprovalRequired = true })
	two := policy("z-two", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers = true, &clustergate.SessionApprovers{Count: 2}
	})
	twoAuto := policy("a-two-auto", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers = true, &clustergate.SessionApprovers{Count: 2}
		s.AutoApprove = &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}}
	})
	oneShortAuto := policy("b-one-auto-30m", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired = true
		s.AutoApprove = &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: 30 * time.Minute}}
	})
	oneLongAuto := policy("a-one-auto-1h", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired = true
		s.AutoApprove = &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}}
	})
	capped := policy("b-capped", func(s *clustergate.SessionApprovalPolicySpec) { s.MaxTTL = &metav1.Duration{Duration: time.Hour} })
	reason := policy("c-reason", func(s *clustergate.SessionApprovalPolicySpec) { s.RequireReason = true })
	otherNamespace := policy("0-ops", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers, s.Sessions.Namespaces = true, &clustergate.SessionApprovers{Count: 5}, []string{"ops"}
	})
	tests := []struct {
		name     string
		policies []clustergate.SessionApprovalPolicy
		want     string
	}{
		{name: "none"},
		{name: "none selects", policies: []clustergate.SessionApprovalPolicy{otherNamespace}},
		{name: "approval required beats not", policies: []clustergate.SessionApprovalPolicy{open, one}, want: "z-one"},
		{name: "more approvers beat fewer", policies: []clustergate.SessionApprovalPolicy{two, one}, want: "z-two"},
		{name: "no auto-approval beats one", policies: []clustergate.SessionApprovalPolicy{twoAuto, two}, want: "z-two"},
		{name: "a shorter auto-approval beats a longer one", policies: []clustergate.SessionApprovalPolicy{oneLongAuto, oneShortAuto}, want: "b-one-auto-30m"},
		{name: "a maxTTL beats none", policies: []clustergate.SessionApprovalPolicy{open, capped}, want: "b-capped"},
		{name: "maxTTL before reason", policies: []clustergate.SessionApprovalPolicy{reason, capped}, want: "b-capped"},
		{name: "reason beats none", policies: []clustergate.SessionApprovalPolicy{reason, open}, want: "c-reason"},
		{name: "equal: the first name", policies: []clustergate.SessionApprovalPolicy{policy("b", func(*clustergate.SessionApprovalPolicySpec) {}),
			policy("a", func(*clustergate.SessionApprovalPolicySpec) {})}, want: "a"},
		{name: "only selecting ones count", policies: []clustergate.SessionApprovalPolicy{otherNamespace, one}, want: "z-one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if p := Governing(tt.policies, shopSession("admin")); p != nil {
				got = p.Name
			}
			if got != tt.want {
				t.Errorf("Governing = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestApplyKeepsAutoApprovalOfItsGroupsOnly(t *testing.T) {
	p := policy("shop", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired = true
		s.AutoApprove = &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}}
	})
	s := shopSession("viewer")
	if applied := Apply(&p, s); !AutoApproves(applied, time.Hour) || AutoApproves(applied, time.Hour+time.Second) {
		t.Errorf("owner in oncall: AutoApproves(1h), (1h1s) = %v, %v; want true, false", AutoApproves(applied, time.Hour), AutoApproves(applied, time.Hour+time.Second))
	}
	s.Spec.Owner.Groups = []string{"dev"}
	if applied := Apply(&p, s); applied.AutoApprove != nil || AutoApproves(applied, time.Minute) {
		t.Errorf("owner not in oncall: applied %+v auto-approves", applied)
	}
}
