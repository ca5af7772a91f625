//go:build !fieldsv1string

package main

// clustergate-apiserver is built with the build tag fieldsv1string
// (`go build -tags=fieldsv1string`, as make build, make run and the
// Dockerfile do): k8s.io/apimachinery then keeps every managedFields entry
// that repeats across objects once in memory instead of once per object,
// about 700 bytes of each stored Session. Without the tag, this file stops
// the build rather than ship a server that needs that much more memory.
var _ = buildWithTagFieldsv1string
