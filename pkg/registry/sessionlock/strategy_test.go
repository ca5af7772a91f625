// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionlock

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestTable prints a lock in force and an expired one as kubectl get shows
// them.
func TestTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-time.Hour))
	past := metav1.NewTime(now.Add(-time.Minute))
	list := &clustergate.SessionLockList{Items: []clustergate.SessionLock{
		{ObjectMeta: metav1.ObjectMeta{Name: "inc-1", CreationTimestamp: created},
			Spec: clustergate.SessionLockSpec{User: "alice", Users: []string{"dataplane:alice"}, Namespace: "team-a", Reason: "INC-1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod", CreationTimestamp: created},
			Spec: clustergate.SessionLockSpec{Group: "sre", Target: &clustergate.SessionLockTarget{Shoot: &clustergate.ShootReference{Name: "prod"}},
				Reason: "freeze", ExpiresAt: &past}},
	}}
	table, err := NewTableConvertor(func() time.Time { return now }).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, c := range table.ColumnDefinitions {
		header = append(header, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "User", "Group", "Target", "Namespace", "State", "Reason", "Expires-At", "Age"}, header); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	want := [][]any{
		{"inc-1", "alice,dataplane:alice", "<none>", "<none>", "team-a", "Active", "INC-1", "<none>", "60m"},
		{"prod", "<none>", "sre", "shoot/prod", "<none>", "Expired", "freeze", "2026-12-01T21:59:00Z", "60m"},
	}
	for i, row := range table.Rows {
		if diff := cmp.Diff(want[i], row.Cells); diff != "" {
			t.Errorf("row %d (-want +got):\n%s", i, diff)
		}
	}
}
