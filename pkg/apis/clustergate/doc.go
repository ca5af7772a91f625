// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +groupName=clustergate.dev

// Package clustergate is the internal version of the clustergate.dev API:
// the types the registry, validation and controllers work with.
package clustergate
