// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func TestValidateSessionLock(t *testing.T) {
	tests := []struct {
		name string
		spec clustergate.SessionLockSpec
		want []string
	}{
		{name: "user", spec: clustergate.SessionLockSpec{User: "alice", Reason: "INC-1"}},
		{name: "all of them", spec: clustergate.SessionLockSpec{User: "alice", Group: "sre", Namespace: "team-a", Reason: "INC-1",
			Target: &clustergate.SessionLockTarget{Cluster: &clustergate.LocalSecretReference{Name: "mc-1"}}}},
		{name: "no reason", spec: clustergate.SessionLockSpec{User: "alice"}, want: []string{"FieldValueRequired spec.reason"}},
		{name: "reason too long", spec: clustergate.SessionLockSpec{User: "alice", Reason: string(make([]byte, MaxReasonLength+1))}, want: []string{"FieldValueTooLong spec.reason"}},
		{name: "matches nothing named", spec: clustergate.SessionLockSpec{Reason: "r"}, want: []string{"FieldValueRequired spec"}},
		{name: "empty target", spec: clustergate.SessionLockSpec{Reason: "r", Target: &clustergate.SessionLockTarget{}}, want: []string{"FieldValueRequired spec.target"}},
		{name: "two targets", spec: clustergate.SessionLockSpec{Reason: "r", Target: &clustergate.SessionLockTarget{
			Shoot: &clustergate.ShootReference{Name: "a"}, Cluster: &clustergate.LocalSecretReference{Name: "b"}}}, want: []string{"FieldValueForbidden spec.target.cluster"}},
		{name: "bad shoot name", spec: clustergate.SessionLockSpec{Reason: "r", Target: &clustergate.SessionLockTarget{
			Shoot: &clustergate.ShootReference{Name: "Prod"}}}, want: []string{"FieldValueInvalid spec.target.shoot.name"}},
		{name: "a shoot's project not a DNS label", spec: clustergate.SessionLockSpec{Reason: "INC-1", Target: &clustergate.SessionLockTarget{
			Shoot: &clustergate.ShootReference{Name: "prod", Project: "Pay"}}}, want: []string{"FieldValueInvalid spec.target.shoot.project"}},
		{name: "users", spec: clustergate.SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}, Reason: "r"}},
		{name: "users alone", spec: clustergate.SessionLockSpec{Users: []string{"dataplane:alice@example.com"}, Reason: "r"}},
		{name: "empty user name", spec: clustergate.SessionLockSpec{Users: []string{"alice", ""}, Reason: "r"}, want: []string{"FieldValueRequired spec.users[1]"}},
		{name: "user name twice", spec: clustergate.SessionLockSpec{Users: []string{"alice", "alice"}, Reason: "r"}, want: []string{"FieldValueDuplicate spec.users[1]"}},
		{name: "too many users", spec: clustergate.SessionLockSpec{Users: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"}, Reason: "r"},
			want: []string{"FieldValueTooMany spec.users"}},
		{name: "bad namespace", spec: clustergate.SessionLockSpec{Reason: "r", Namespace: "Team_A"}, want: []string{"FieldValueInvalid spec.namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &clustergate.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc-1"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionLock(l))); diff != "" {
				t.Errorf("error paths (-want +got):\n%s", diff)
			}
			old := &clustergate.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc-1", ResourceVersion: "1"}, Spec: tt.spec}
			l.ResourceVersion = "1"
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionLockUpdate(l, old))); diff != "" {
				t.Errorf("update error paths (-want +got):\n%s", diff)
			}
		})
	}
}
