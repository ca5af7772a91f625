// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/clustergate/clustergate/pkg/apis/clustergate
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=dev.clustergate.v1alpha1
// +groupName=clustergate.dev

// Package v1alpha1 is the v1alpha1 version of the clustergate.dev API, the
// version clients see.
package v1alpha1
