// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// TestDeleteStampsDeleter deletes a session that a finalizer keeps: the
// first deleter is stamped into status.deletedBy in the write that sets
// the deletionTimestamp, and a second delete changes nothing.
func TestDeleteStampsDeleter(t *testing.T) {
	tests := []struct {
		name     string
		deleters []string
		want     string
	}{
		{name: "one delete", deleters: []string{"bob"}, want: "bob"},
		{name: "deleted twice, the first deleter stays", deleters: []string{"bob", "carol"}, want: "bob"},
		{name: "no user in the request", deleters: []string{""}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStorage(t)
			obj := newSession("fix-etcd", "alice", "local", nil)
			obj.Finalizers = []string{"test.clustergate.dev/keep"}
			create(t, s, obj)
			for _, who := range tt.deleters {
				ctx := registrytest.Context(ns)
				if who != "" {
					ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: who})
				}
				if _, _, err := s.Session.Delete(ctx, "fix-etcd", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
					t.Fatalf("delete as %q: %v", who, err)
				}
			}
			got := get(t, s, "fix-etcd")
			if got.DeletionTimestamp == nil || got.Status.DeletedBy != tt.want {
				t.Errorf("deletionTimestamp %v, deletedBy %q; want set, %q", got.DeletionTimestamp, got.Status.DeletedBy, tt.want)
			}
		})
	}
}
