// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build fieldsv1string

package apiserver

// internedFieldsV1 is true when the server is built with the build tag
// fieldsv1string: k8s.io/apimachinery then keeps a managedFields entry that
// repeats across objects once in memory instead of once per object.
const internedFieldsV1 = true
