// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quotaconfig hands the generic ResourceQuota admission plugin the
// quota configuration of clustergate's resources, which kube-apiserver's
// own initializer gives its plugin and an aggregated server must give
// itself. With it, a ResourceQuota in a namespace limits
// count/sessions.clustergate.dev and
// count/gardenerclusterkubeconfigs.clustergate.dev at admission; the core
// cluster's kube-controller-manager keeps the quota's usage.
package quotaconfig

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// Configuration counts each clustergate object against its
// count/<resource>.clustergate.dev quota. Nothing else of them is quota'd:
// they hold no compute resources.
func Configuration() quota.Configuration {
	return generic.NewConfiguration([]quota.Evaluator{
		// No lister: admission only adds to the usage kube-controller-manager
		// computed; it never recounts.
		generic.NewObjectCountEvaluator(clustergate.Resource("sessions"), nil, ""),
		generic.NewObjectCountEvaluator(clustergate.Resource("gardenerclusterkubeconfigs"), nil, ""),
	}, nil)
}

// Initializer gives the quota configuration to the plugins that want it.
type Initializer struct {
	// Configuration is what the plugins get.
	Configuration quota.Configuration
}

var _ admission.PluginInitializer = Initializer{}

// Initialize sets the quota configuration of plugins that want one.
func (i Initializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(i.Configuration)
	}
}
