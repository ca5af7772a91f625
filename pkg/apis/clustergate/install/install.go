// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package install registers the clustergate.dev API group, internal and
// versioned, in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Install registers the API group and adds its types to a scheme, with
// v1alpha1 as the preferred version.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(clustergate.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
