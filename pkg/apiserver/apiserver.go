// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apiserver assembles the clustergate aggregated API server from its
// configuration: NewConfig → Config → CompletedConfig → New. The command
// parses flags into the generic server's options (NewRecommendedOptions)
// and an ExtraConfig; everything built from them is built here.
package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/install"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/dataplane"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/proxy"
	gckstorage "github.com/clustergate/clustergate/pkg/registry/gardenerclusterkubeconfig/storage"
	sessionstorage "github.com/clustergate/clustergate/pkg/registry/session/storage"
	sapstorage "github.com/clustergate/clustergate/pkg/registry/sessionapprovalpolicy/storage"
	sessionlockstorage "github.com/clustergate/clustergate/pkg/registry/sessionlock/storage"
	"github.com/clustergate/clustergate/pkg/registry/target"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

var (
	// Scheme holds every type the server serves or reads.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes the types of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters, such as the options of
	// sessions/proxy, into the types of Scheme.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	install.Install(Scheme)
	// Options such as ListOptions are registered in v1 of the empty group,
	// where the generic server looks for them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	Scheme.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// ExtraConfig is the configuration of clustergate beyond the generic
// server's: plain settings, as the command's flags give them, from which
// New builds the server's parts. NewConfig fills in what they name in
// files: SessionKubeconfig.CAData, SessionKubeconfig.DataPlaneCAData,
// SessionKubeconfig.DataPlaneUserPrefixes and Controllers.Sessions.IstioPolicy.Issuers.
type ExtraConfig struct {
	// Namespace is the server's own namespace in the core cluster: it holds
	// the sessions' credentials and the kubeconfigs of cluster targets, and
	// by default the controllers' Lease. NewConfig passes it down to the
	// parts that need it.
	Namespace string
	// gardener is the server's Gardener client, which NewConfig builds
	// with a Gardener project; nil without one or standalone.
	gardener *gardener.Client
	// SessionLimits bound the Sessions users may create. Its access groups
	// are SessionAccess's levels.
	SessionLimits validation.SessionLimits
	// SessionAccess holds the access levels and the deny rules.
	SessionAccess *sessionaccess.Configuration
	// SessionMaxPerOwner caps the live sessions of one owner; 0 is no cap.
	SessionMaxPerOwner int
	// ProxyLimits cap the concurrent proxied requests of a session and of
	// an owner on this replica.
	ProxyLimits proxy.Limits
	// ModeratorWait bounds how long a stream of a session whose access
	// level requires a moderator waits for one; 0 is the proxy's default.
	ModeratorWait time.Duration
	// SessionKubeconfig shapes the kubeconfigs of sessions/kubeconfig.
	SessionKubeconfig sessionstorage.KubeconfigOptions
	// ExternalCAFile and DataPlaneCAFile hold the CA bundles that verify
	// SessionKubeconfig.ExternalURL and SessionKubeconfig.DataPlaneURL.
	ExternalCAFile, DataPlaneCAFile string
	// DataPlane configures the data plane's listener; off without an
	// address. Its AuthenticationConfiguration also says how its issuers
	// name users.
	DataPlane dataplane.Config
	// Controllers configures the controllers; NewConfig sets
	// Controllers.Sessions.Namespace, and an empty LeaseNamespace, to
	// Namespace.
	Controllers controllers.Options
	// ClientQPS and ClientBurst bound the requests of the controllers and
	// of the credentials cache.
	ClientQPS   float32
	ClientBurst int
	// Standalone: there is no core cluster, so no controllers and no
	// credentials; sessions can be stored but not used.
	Standalone bool
	// Recording configures the recording of sessions.
	Recording RecordingConfig
}

// Config is the whole configuration of the server.
type Config struct {
	// GenericConfig configures the generic API server.
	GenericConfig *genericapiserver.RecommendedConfig
	// ExtraConfig configures clustergate's own parts.
	ExtraConfig ExtraConfig
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
	// core reaches the core cluster (nil when standalone).
	core *restclient.Config
}

// CompletedConfig is a Config with every default filled in. Only Complete
// makes one, so a server is never built from a half-filled Config.
type CompletedConfig struct {
	*completedConfig
}

// Server is a running-ready clustergate API server.
type Server struct {
	// GenericAPIServer serves the API, health checks, metrics and OpenAPI.
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// withClientLimits returns a copy of cfg with the controllers' rate limits.
func (c *ExtraConfig) withClientLimits(cfg *restclient.Config) *restclient.Config {
	cfg = restclient.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = c.ClientQPS, c.ClientBurst
	return cfg
}

// Complete fills in the defaults of the generic configuration.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: cfg.GenericConfig.Complete(),
		ExtraConfig:   &cfg.ExtraConfig,
		core:          cfg.GenericConfig.ClientConfig,
	}}
}

// New builds the server and installs the clustergate.dev API group.
func (c CompletedConfig) New() (*Server, error) {
	if err := c.ExtraConfig.SessionLimits.Validate(); err != nil {
		return nil, err
	}
	reportBuild()
	genericServer, err := c.GenericConfig.New("clustergate-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	parts, err := c.newParts(genericServer)
	if err != nil {
		return nil, err
	}
	optsGetter := c.GenericConfig.RESTOptionsGetter
	locks, err := sessionlockstorage.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	policies, err := sapstorage.NewREST(Scheme, optsGetter, parts.targets)
	if err != nil {
		return nil, err
	}
	sessions, err := sessionstorage.NewStorage(Scheme, optsGetter, sessionstorage.Config{
		Limits: c.ExtraConfig.SessionLimits, MaxPerOwner: c.ExtraConfig.SessionMaxPerOwner, Proxy: parts.proxyConfig(c.ExtraConfig.SessionKubeconfig),
		// The controllers run unless standalone; the kubeconfig controller
		// only with a Gardener project.
		Finalize:        !c.ExtraConfig.Standalone,
		Locks:           locks,
		Policies:        policies,
		Authorizer:      c.GenericConfig.Authorization.Authorizer,
		GardenerProject: c.ExtraConfig.Controllers.Gardener.Project,
	})
	if err != nil {
		return nil, err
	}
	kubeconfigs, err := gckstorage.NewStorage(Scheme, optsGetter, !c.ExtraConfig.Standalone && c.ExtraConfig.Controllers.Gardener.Project != "",
		c.ExtraConfig.Controllers.Gardener.Project)
	if err != nil {
		return nil, err
	}

	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(clustergate.GroupName, Scheme, ParameterCodec, Codecs)
	apiGroupInfo.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"sessions":                          sessions.Session,
		"sessions/status":                   sessions.Status,
		"sessions/approval":                 sessions.Approval,
		"sessions/extension":                sessions.Extension,
		"sessions/proxy":                    sessions.Proxy,
		"sessions/kubeconfig":               sessions.Kubeconfig,
		"sessions/recordings":               sessions.Recordings,
		"sessions/moderation":               sessions.Moderation,
		"gardenerclusterkubeconfigs":        kubeconfigs.GardenerClusterKubeconfig,
		"gardenerclusterkubeconfigs/status": kubeconfigs.Status,
		"sessionlocks":                      locks,
		"sessionapprovalpolicies":           policies,
		// Authorization only: who may reach which target.
		v1alpha1.ResourceShoots:   target.NewREST("shoot", "Shoot"),
		v1alpha1.ResourceClusters: target.NewREST("cluster", "Cluster"),
	}
	if err := genericServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, err
	}
	if parts.eventDelivery, err = c.ExtraConfig.eventDelivery(optsGetter); err != nil {
		return nil, err
	}
	if err := parts.start(genericServer, c.ExtraConfig, c.core, sessions.Proxy); err != nil {
		return nil, err
	}
	return &Server{GenericAPIServer: genericServer}, nil
}
