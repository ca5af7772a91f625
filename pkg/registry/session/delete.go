// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// CheckGracefulDelete stamps status.deletedBy with the user of the first
// delete request of a session: who revoked it, when it is deleted before
// its expiry. The generic store calls it on the stored object inside the
// update that sets the deletionTimestamp (the finalizer keeps the session),
// so the deleter is written in that same write; a later delete of a
// session already deleting changes nothing. It returns false: Sessions
// have no grace period, their finalizer holds them.
func (Strategy) CheckGracefulDelete(ctx context.Context, obj runtime.Object, _ *metav1.DeleteOptions) bool {
	s, ok := obj.(*clustergate.Session)
	if !ok || s.DeletionTimestamp != nil {
		return false
	}
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		s.Status.DeletedBy = u.GetName()
	}
	return false
}

var _ rest.RESTGracefulDeleteStrategy = Strategy{}
