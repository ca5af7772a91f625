// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"strconv"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// buildInfo says how the server was built, for dashboards and for whoever
// wonders why one build needs more memory than another.
var buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name:           "clustergate_build_info",
	Help:           "How the server was built: interned_managed_fields is true with the build tag fieldsv1string (make build, the image), false for a plain go build or go install, which keeps managedFields once per object.",
	StabilityLevel: metrics.ALPHA,
}, []string{"interned_managed_fields"})

var reportBuildOnce sync.Once

// reportBuild logs and exports, once per process, whether managedFields
// are interned.
func reportBuild() {
	reportBuildOnce.Do(func() {
		legacyregistry.MustRegister(buildInfo)
		buildInfo.WithLabelValues(strconv.FormatBool(internedFieldsV1)).Set(1)
		if internedFieldsV1 {
			klog.InfoS("Built with fieldsv1string: managedFields that repeat across objects are kept once")
			return
		}
		klog.InfoS("Built without the tag fieldsv1string: every managedFields entry is kept once per object, about 700 bytes more per Session; make build and the image use the tag")
	})
}
