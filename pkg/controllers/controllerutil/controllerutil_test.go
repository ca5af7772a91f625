// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllerutil

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func TestSlimForCache(t *testing.T) {
	session := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, {Manager: "clustergate", Subresource: "status"}}}}
	got, err := SlimForCache(session)
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*v1alpha1.Session)
	if s.ManagedFields != nil || s.Name != "s" || s.Labels["a"] != "b" {
		t.Errorf("after the transform: %+v", s.ObjectMeta)
	}
	// What is not an object, such as a tombstone, passes unchanged.
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/s"}
	if got, err := SlimForCache(tombstone); err != nil || got != tombstone {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}
