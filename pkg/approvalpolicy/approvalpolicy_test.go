// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package approvalpolicy

import (
	"errors"
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
		{name: "target labels", selector: clustergate.SessionSelector{TargetLabels: production}, session: shopSession("admin"), want: true},
		{name: "target labels, other values", selector: clustergate.SessionSelector{TargetLabels: &metav1.LabelSelector{
			MatchLabels: map[string]string{"env": "dev"}}}, session: shopSession("admin")},
		{name: "target labels, expressions", selector: clustergate.SessionSelector{TargetLabels: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"shop", "pay"}}}}},
			session: shopSession("admin"), want: true},
		{name: "target labels with the rest", selector: clustergate.SessionSelector{TargetLabels: production, AccessLevels: []string{"admin"}},
			session: shopSession("admin"), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := clustergate.SessionApprovalPolicy{Spec: clustergate.SessionApprovalPolicySpec{Sessions: tt.selector}}
			reads := 0
			got, err := Matches(&p, tt.session, func() (map[string]string, error) {
				reads++
				return map[string]string{"env": "production", "team": "shop"}, nil
			})
			if err != nil || got != tt.want {
				t.Errorf("Matches = %v, %v; want %v", got, err, tt.want)
			}
			if wantReads := 0; tt.selector.TargetLabels == nil && reads != wantReads {
				t.Errorf("the target's labels were read %d times, want %d: the policy does not select by them", reads, wantReads)
			}
		})
	}
}

// production selects targets labelled env: production.
var production = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "production"}}

// TestGoverningByTargetLabels: the labels are read once however many
// policies select by them, never when none does or none could win, and a
// failure to read them fails the choice rather than let a laxer policy
// govern.
func TestGoverningByTargetLabels(t *testing.T) {
	byLabels := policy("z-prod-two", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers, s.Sessions.TargetLabels = true, &clustergate.SessionApprovers{Count: 2}, production
	})
	alsoByLabels := policy("z-prod-three", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers, s.Sessions.TargetLabels = true, &clustergate.SessionApprovers{Count: 3}, production
	})
	one := policy("a-one", func(s *clustergate.SessionApprovalPolicySpec) { s.ApprovalRequired = true })
	stricter := policy("a-five", func(s *clustergate.SessionApprovalPolicySpec) {
		s.ApprovalRequired, s.Approvers = true, &clustergate.SessionApprovers{Count: 5}
	})
	unreadable := errors.New("gardener: unavailable")
	tests := []struct {
		name      string
		policies  []clustergate.SessionApprovalPolicy
		labels    map[string]string
		err       error
		want      string
		wantReads int
		wantErr   bool
	}{
		{name: "production target", policies: []clustergate.SessionApprovalPolicy{one, byLabels, alsoByLabels},
			labels: map[string]string{"env": "production"}, want: "z-prod-three", wantReads: 1},
		{name: "other target", policies: []clustergate.SessionApprovalPolicy{one, byLabels},
			labels: map[string]string{"env": "dev"}, want: "a-one", wantReads: 1},
		{name: "no policy by labels", policies: []clustergate.SessionApprovalPolicy{one}, want: "a-one"},
		{name: "a stricter policy wins first", policies: []clustergate.SessionApprovalPolicy{stricter, byLabels}, want: "a-five"},
		{name: "unreadable labels fail", policies: []clustergate.SessionApprovalPolicy{one, byLabels}, err: unreadable, wantReads: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			p, err := Governing(tt.policies, shopSession("admin"), func() (map[string]string, error) {
				reads++
				return tt.labels, tt.err
			})
			if (err != nil) != tt.wantErr || (tt.wantErr && !errors.Is(err, unreadable)) {
				t.Fatalf("Governing error %v, want error %v", err, tt.wantErr)
			}
			got := ""
			if p != nil {
				got = p.Name
			}
			if got != tt.want || reads != tt.wantReads {
				t.Errorf("Governing = %q after %d reads of the labels, want %q after %d", got, reads, tt.want, tt.wantReads)
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
			p, err := Governing(tt.policies, shopSession("admin"), func() (map[string]string, error) {
				t.Fatal("read the target's labels, which no policy selects by")
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if p != nil {
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
