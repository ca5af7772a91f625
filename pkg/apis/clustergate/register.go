// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package clustergate

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by clustergate.
const GroupName = "clustergate.dev"

// SchemeGroupVersion is the internal version of the group, used to register
// the internal types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add the internal types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Session{},
		&SessionList{},
		&SessionProxyOptions{},
		&SessionKubeconfig{},
		&GardenerClusterKubeconfig{},
		&GardenerClusterKubeconfigList{},
		&SessionLock{},
		&SessionLockList{},
		&SessionApprovalPolicy{},
		&SessionApprovalPolicyList{},
	)
	return nil
}
