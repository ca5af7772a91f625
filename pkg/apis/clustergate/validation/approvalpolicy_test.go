// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func TestValidateSessionApprovalPolicy(t *testing.T) {
	hour := metav1.Duration{Duration: time.Hour}
	approvers := func(count int32, users ...string) *clustergate.SessionApprovers {
		return &clustergate.SessionApprovers{Count: count, Users: users}
	}
	tests := []struct {
		name string
		spec clustergate.SessionApprovalPolicySpec
		want []string
	}{
		{name: "the issue's", spec: clustergate.SessionApprovalPolicySpec{
			Sessions:         clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{{Shoot: &clustergate.ShootReference{Name: "local"}}}, AccessLevels: []string{"admin"}},
			ApprovalRequired: true, Approvers: &clustergate.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}, ExcludeOwnerGroups: []string{"team-shop"}},
			AutoApprove: &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: hour}, MaxTTL: &metav1.Duration{Duration: 4 * time.Hour}, RequireReason: true}},
		{name: "empty selects all, asks nothing"},
		{name: "target labels", spec: clustergate.SessionApprovalPolicySpec{Sessions: clustergate.SessionSelector{
			TargetLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "production"}}}}},
		{name: "target labels, a bad key and operator", spec: clustergate.SessionApprovalPolicySpec{Sessions: clustergate.SessionSelector{
			TargetLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"not a key": "x"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Like"}}}}},
			want: []string{"FieldValueInvalid spec.sessions.targetLabels.matchLabels", "FieldValueInvalid spec.sessions.targetLabels.matchExpressions[0].operator"}},
		{name: "approvers without approval", spec: clustergate.SessionApprovalPolicySpec{Approvers: approvers(1)},
			want: []string{"FieldValueForbidden spec.approvers"}},
		{name: "no approvers", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true, Approvers: approvers(0)},
			want: []string{"FieldValueInvalid spec.approvers.count"}},
		{name: "a committee", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true, Approvers: approvers(MaxPolicyApprovers + 1)},
			want: []string{"FieldValueInvalid spec.approvers.count"}},
		{name: "more approvers than users named", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true, Approvers: approvers(3, "bob", "carol")},
			want: []string{"FieldValueInvalid spec.approvers.count"}},
		{name: "a user twice", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true, Approvers: approvers(1, "bob", "bob")},
			want: []string{"FieldValueDuplicate spec.approvers.users[1]"}},
		{name: "an empty group", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true,
			Approvers: &clustergate.SessionApprovers{Count: 1, Groups: []string{""}, ExcludeOwnerGroups: []string{""}}},
			want: []string{"FieldValueRequired spec.approvers.groups[0]", "FieldValueRequired spec.approvers.excludeOwnerGroups[0]"}},
		{name: "auto-approval without approval", spec: clustergate.SessionApprovalPolicySpec{
			AutoApprove: &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: hour}},
			want: []string{"FieldValueForbidden spec.autoApprove"}},
		{name: "auto-approval of nobody, for no time", spec: clustergate.SessionApprovalPolicySpec{ApprovalRequired: true,
			AutoApprove: &clustergate.SessionAutoApproval{}},
			want: []string{"FieldValueRequired spec.autoApprove.groups", "FieldValueInvalid spec.autoApprove.maxTTL"}},
		{name: "negative maxTTL", spec: clustergate.SessionApprovalPolicySpec{MaxTTL: &metav1.Duration{Duration: -time.Hour}},
			want: []string{"FieldValueInvalid spec.maxTTL"}},
		{name: "bad selector", spec: clustergate.SessionApprovalPolicySpec{Sessions: clustergate.SessionSelector{
			Namespaces: []string{"Shop"}, AccessLevels: []string{"admin", "admin"}, Targets: []clustergate.SessionLockTarget{{}}}},
			want: []string{"FieldValueInvalid spec.sessions.namespaces[0]", "FieldValueDuplicate spec.sessions.accessLevels[1]", "FieldValueRequired spec.sessions.targets[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-admin"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionApprovalPolicy(p))); diff != "" {
				t.Errorf("error paths (-want +got):\n%s", diff)
			}
			old := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-admin", ResourceVersion: "1"}}
			p.ResourceVersion = "1"
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionApprovalPolicyUpdate(p, old))); diff != "" {
				t.Errorf("update error paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSessionUnderPolicy(t *testing.T) {
	p := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-admin"},
		Spec: clustergate.SessionApprovalPolicySpec{MaxTTL: &metav1.Duration{Duration: time.Hour}, RequireReason: true}}
	s := validSession()
	s.Spec.TTL.Duration, s.Spec.Reason = 2*time.Hour, ""
	errs := ValidateSessionUnderPolicy(s, p)
	if diff := cmp.Diff([]string{"FieldValueInvalid spec.ttl", "FieldValueRequired spec.reason"}, errorPaths(errs)); diff != "" {
		t.Errorf("error paths (-want +got):\n%s", diff)
	}
	if want := `spec.ttl: Invalid value: "2h0m0s": must be at most 1h0m0s under SessionApprovalPolicy "shop-admin"`; errs[0].Error() != want {
		t.Errorf("error = %q, want %q", errs[0].Error(), want)
	}
	s.Spec.TTL.Duration, s.Spec.Reason = time.Hour, "INC-1"
	if errs := ValidateSessionUnderPolicy(s, p); len(errs) > 0 {
		t.Errorf("a session within the policy: %v", errs)
	}
}
