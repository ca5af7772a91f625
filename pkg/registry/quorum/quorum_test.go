// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package quorum

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
	"github.com/clustergate/clustergate/pkg/registry/sessionlock"
)

// TestListSeesAnotherReplicasWrite: a lock one replica stored a moment ago
// is in the list another replica's Lister reads right after, and closing
// the store closes the Lister's storage too.
func TestListSeesAnotherReplicasWrite(t *testing.T) {
	scheme := registrytest.Scheme()
	opts := registrytest.NewRESTOptions(t, scheme, "sessionlocks")
	store := func() *genericregistry.Store {
		s := &genericregistry.Store{
			NewFunc:                   func() runtime.Object { return &clustergate.SessionLock{} },
			NewListFunc:               func() runtime.Object { return &clustergate.SessionLockList{} },
			DefaultQualifiedResource:  clustergate.Resource("sessionlocks"),
			SingularQualifiedResource: clustergate.Resource("sessionlock"),
			CreateStrategy:            sessionlock.NewStrategy(scheme),
			UpdateStrategy:            sessionlock.NewStrategy(scheme),
			DeleteStrategy:            sessionlock.NewStrategy(scheme),
			TableConvertor:            rest.NewDefaultTableConvertor(clustergate.Resource("sessionlocks")),
		}
		if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: opts, AttrFunc: sessionlock.GetAttrs}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	writer, reader := store(), store()
	t.Cleanup(writer.Destroy)
	lister, err := NewLister(reader, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Destroy)

	var names []string
	for _, name := range []string{"a", "b"} {
		if _, err := writer.Create(registrytest.Context(""), &clustergate.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clustergate.SessionLockSpec{User: "alice", Reason: "INC-1"}}, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		list, err := lister.List(registrytest.Context("sre"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range list.(*clustergate.SessionLockList).Items {
			got = append(got, l.Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("listed %v, want %v", got, names)
		}
	}
}
