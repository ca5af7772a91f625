// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package ownership

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func TestIs(t *testing.T) {
	tests := []struct {
		name  string
		user  user.Info
		owner clustergate.SessionOwner
		want  bool
	}{
		{name: "same name, owner without UID", user: &user.DefaultInfo{Name: "alice"}, owner: clustergate.SessionOwner{Username: "alice"}, want: true},
		{name: "same name, caller with a UID, owner without", user: &user.DefaultInfo{Name: "alice", UID: "1"}, owner: clustergate.SessionOwner{Username: "alice"}, want: true},
		{name: "same name and UID", user: &user.DefaultInfo{Name: "alice", UID: "1"}, owner: clustergate.SessionOwner{Username: "alice", UID: "1"}, want: true},
		{name: "same name, other UID", user: &user.DefaultInfo{Name: "alice", UID: "2"}, owner: clustergate.SessionOwner{Username: "alice", UID: "1"}},
		{name: "same name, caller without the owner's UID", user: &user.DefaultInfo{Name: "alice"}, owner: clustergate.SessionOwner{Username: "alice", UID: "1"}},
		{name: "other name, same UID", user: &user.DefaultInfo{Name: "bob", UID: "1"}, owner: clustergate.SessionOwner{Username: "alice", UID: "1"}},
		{name: "name is a prefix", user: &user.DefaultInfo{Name: "ali"}, owner: clustergate.SessionOwner{Username: "alice"}},
		{name: "groups do not matter", user: &user.DefaultInfo{Name: "alice", Groups: []string{"x"}}, owner: clustergate.SessionOwner{Username: "alice", Groups: []string{"y"}}, want: true},
		{name: "no user", owner: clustergate.SessionOwner{Username: "alice"}},
		{name: "an owner without a name is nobody", user: &user.DefaultInfo{}, owner: clustergate.SessionOwner{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Is(tt.user, tt.owner); got != tt.want {
				t.Errorf("Is = %v, want %v", got, tt.want)
			}
		})
	}
}
