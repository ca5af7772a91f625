// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"slices"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/admission/quotaconfig"
	"github.com/clustergate/clustergate/pkg/admission/sessionowner"
	"github.com/clustergate/clustergate/pkg/admission/targetaccess"
)

// AllOrderedPlugins are the admission plugins the server runs, in the order
// they run, every one enabled unless --disable-admission-plugins names it.
// SessionOwner runs right after NamespaceLifecycle, so that webhooks and
// admission policies see the stamped owner; TargetAccess validates after
// it, on the owner the session is stored with. ResourceQuota comes last, as
// in kube-apiserver, so that a request refused by any other plugin uses no
// quota. The generic server runs the validating plugins after all the
// mutating ones; their order among themselves is this one.
var AllOrderedPlugins = []string{
	lifecycle.PluginName,                 // NamespaceLifecycle
	sessionowner.PluginName,              // SessionOwner
	targetaccess.PluginName,              // TargetAccess
	mutatingadmissionpolicy.PluginName,   // MutatingAdmissionPolicy
	mutatingwebhook.PluginName,           // MutatingAdmissionWebhook
	validatingadmissionpolicy.PluginName, // ValidatingAdmissionPolicy
	validatingwebhook.PluginName,         // ValidatingAdmissionWebhook
	resourcequota.PluginName,             // ResourceQuota
}

// RegisterAllAdmissionPlugins registers the plugins of AllOrderedPlugins
// that the generic server does not register itself. The order of
// registration is irrelevant; AllOrderedPlugins is the order they run in.
func RegisterAllAdmissionPlugins(plugins *admission.Plugins) {
	sessionowner.Register(plugins)
	targetaccess.Register(plugins)
	resourcequota.Register(plugins)
}

// setUpAdmission registers the plugins, orders them and initializes them
// as a server without Gardener (NewConfig hands TargetAccess Gardener).
func setUpAdmission(o *genericoptions.RecommendedOptions) {
	RegisterAllAdmissionPlugins(o.Admission.Plugins)
	o.Admission.RecommendedPluginOrder = slices.Clone(AllOrderedPlugins)
	o.ExtraAdmissionInitializers = admissionInitializers(targetaccess.Gardener{})
}

// admissionInitializers hands ResourceQuota the quota configuration of
// clustergate's resources, which kube-apiserver's own initializer gives its
// plugin and an aggregated server must give itself, and TargetAccess the
// server's Gardener projects.
func admissionInitializers(g targetaccess.Gardener) func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
	return func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		return []admission.PluginInitializer{
			quotaconfig.Initializer{Configuration: quotaconfig.Configuration()},
			targetaccess.Initializer{Gardener: g},
		}, nil
	}
}

// targetAccessGardener is what TargetAccess knows of Gardener: the default
// project and, with a Gardener client, its cache of projects' namespaces.
func (c *ExtraConfig) targetAccessGardener() targetaccess.Gardener {
	g := targetaccess.Gardener{DefaultProject: c.Controllers.Gardener.Project}
	if c.gardener != nil {
		g.Projects = c.gardener.Projects
	}
	return g
}

// standaloneAdmission is the admission of a server without a core cluster,
// whose generic admission options are dropped: SessionOwner alone, which
// needs nothing but the authorizer, so that owners are still stamped and
// checked.
func standaloneAdmission(a authorizer.Authorizer) admission.Interface {
	klog.InfoS("No core cluster configured (--kubeconfig): running standalone; only system:masters is authorized and SessionOwner is the only admission plugin")
	owner := sessionowner.New()
	owner.SetAuthorizer(a)
	return owner
}
