// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionapprovalpolicy

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestTable prints the policy and one that asks for nothing but a
// reason as kubectl get -o wide shows them.
func TestTable(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-time.Hour))
	list := &clustergate.SessionApprovalPolicyList{Items: []clustergate.SessionApprovalPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop", CreationTimestamp: created}, Spec: clustergate.SessionApprovalPolicySpec{
			Sessions:         clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{{Shoot: &clustergate.ShootReference{Name: "local"}}}},
			ApprovalRequired: true,
			Approvers:        &clustergate.SessionApprovers{Count: 2, Users: []string{"root"}, Groups: []string{"shop-oncall"}, ExcludeOwnerGroups: []string{"team-shop"}},
			AutoApprove:      &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}},
			MaxTTL:           &metav1.Duration{Duration: 4 * time.Hour}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "reasons", CreationTimestamp: created}, Spec: clustergate.SessionApprovalPolicySpec{
			Sessions: clustergate.SessionSelector{Namespaces: []string{"demo", "shop"}, AccessLevels: []string{"viewer"}, Scoped: ptr.To(true),
				TargetLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "production"}}},
			RequireReason: true}},
	}}
	table, err := NewTableConvertor(func() time.Time { return now }).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, c := range table.ColumnDefinitions {
		header = append(header, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Namespaces", "Targets", "Access", "Approval", "Approvers", "Auto-Approve", "Max-TTL",
		"Scoped", "Exclude-Owner-Groups", "Reason", "Age"}, header); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	want := [][]any{
		{"shop", "<none>", "shoot/local", "<none>", "2", "root,group:shop-oncall", "oncall <= 60m", "4h", "<none>", "team-shop", "Optional", "60m"},
		{"reasons", "demo,shop", "labels:env=production", "viewer", "None", "<none>", "<none>", "<none>", "true", "<none>", "Required", "60m"},
	}
	for i, row := range table.Rows {
		if diff := cmp.Diff(want[i], row.Cells); diff != "" {
			t.Errorf("row %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestUpdateWarnsThatSessionsKeepThePolicy: a change of the spec bumps the
// generation, which sessions record, and warns that the sessions created
// before keep the policy as it was.
func TestUpdateWarnsThatSessionsKeepThePolicy(t *testing.T) {
	st := NewStrategy(nil)
	old := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 1}}
	same := old.DeepCopy()
	st.PrepareForUpdate(context.Background(), same, old)
	if w := st.WarningsOnUpdate(context.Background(), same, old); same.Generation != 1 || len(w) != 0 {
		t.Errorf("unchanged spec: generation %d, warnings %q; want 1, none", same.Generation, w)
	}
	changed := old.DeepCopy()
	changed.Spec.ApprovalRequired = true
	st.PrepareForUpdate(context.Background(), changed, old)
	if w := st.WarningsOnUpdate(context.Background(), changed, old); changed.Generation != 2 || len(w) != 1 {
		t.Errorf("changed spec: generation %d, warnings %q; want 2, one", changed.Generation, w)
	}
}
