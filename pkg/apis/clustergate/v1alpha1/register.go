// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by clustergate.
const GroupName = "clustergate.dev"

// SchemeGroupVersion is the group version of this package's types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this version to a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version's types, defaults, conversions and field
	// label conversions to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated defaulters and conversions register themselves in
	// localSchemeBuilder as well.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addFieldLabelConversionFuncs)
}

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
		// Served by sessions/recordings as JSON, never stored: no
		// internal version.
		&SessionRecordingList{},
		&SessionRequestLog{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
