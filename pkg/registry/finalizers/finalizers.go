// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package finalizers adds a controller's finalizer to objects at create, so
// that the controller's first pass need not write it.
package finalizers

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Add adds finalizer to obj once, after any the client asked for.
func Add(obj metav1.Object, finalizer string) {
	if f := obj.GetFinalizers(); !slices.Contains(f, finalizer) {
		obj.SetFinalizers(append(f, finalizer))
	}
}
