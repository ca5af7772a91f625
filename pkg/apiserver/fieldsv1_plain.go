// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !fieldsv1string

package apiserver

// internedFieldsV1 is false in a plain build (without the tag
// fieldsv1string): the server works, and keeps every managedFields entry
// once per object, about 700 bytes more per stored Session.
const internedFieldsV1 = false
