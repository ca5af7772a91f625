// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package registrytest runs registry storage against a real etcd, embedded in
// the test process, for storage tests.
package registrytest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/install"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
)

// Scheme returns a scheme with the clustergate.dev group installed.
func Scheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// NewRESTOptions starts an etcd for the test and returns REST options that
// store one resource in it, encoded as v1alpha1 as the server does.
func NewRESTOptions(t *testing.T, scheme *runtime.Scheme, resource string) generic.RESTOptions {
	t.Helper()
	if testing.Short() {
		// make check runs -short; make test-unit runs the storage tests.
		t.Skip("needs etcd: make test-unit runs it")
	}
	u, err := embeddedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := embeddedetcd.Start(context.Background(), t.TempDir(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)

	codec := serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	config := storagebackend.NewDefaultConfig("/registry/"+v1alpha1.GroupName, codec)
	config.Transport.ServerList = []string{etcd.ClientURL}
	return generic.RESTOptions{
		StorageConfig:           config.ForResource(v1alpha1.Resource(resource)),
		Decorator:               generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          resource,
	}
}

// Context returns a request context in namespace ns.
func Context(ns string) context.Context {
	return genericapirequest.WithNamespace(genericapirequest.NewContext(), ns)
}
