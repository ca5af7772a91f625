// Package apiserver assembles the clustergate aggregated API server from its
// configuration: Config → CompletedConfig → New.
package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/clustergate/clustergate/pkg/admission/targetaccess"
	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/install"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	gckstorage "github.com/clustergate/clustergate/pkg/registry/gardenerclusterkubeconfig/storage"
	sessionstorage "github.com/clustergate/clustergate/pkg/registry/session/storage"
	"github.com/clustergate/clustergate/pkg/registry/target"
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

// ExtraConfig is the configuration of clustergate beyond the generic server's.
type ExtraConfig struct {
	// SessionPolicy bounds the Sessions users may create.
	SessionPolicy validation.SessionPolicy
	// SessionMaxPerOwner caps the live sessions of one owner; 0 is no cap.
	SessionMaxPerOwner int
	// Proxy configures sessions/proxy and sessions/kubeconfig.
	Proxy sessionstorage.ProxyConfig
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

// Complete fills in the defaults of the generic configuration.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: cfg.GenericConfig.Complete(),
		ExtraConfig:   &cfg.ExtraConfig,
	}}
}

// New builds the server and installs the clustergate.dev API group.
func (c CompletedConfig) New() (*Server, error) {
	if err := c.ExtraConfig.SessionPolicy.Validate(); err != nil {
		return nil, err
	}
	genericServer, err := c.GenericConfig.New("clustergate-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	optsGetter := c.GenericConfig.RESTOptionsGetter
	sessions, err := sessionstorage.NewStorage(Scheme, optsGetter, sessionstorage.Config{
		Policy: c.ExtraConfig.SessionPolicy, MaxPerOwner: c.ExtraConfig.SessionMaxPerOwner, Proxy: c.ExtraConfig.Proxy,
	})
	if err != nil {
		return nil, err
	}
	kubeconfigs, err := gckstorage.NewStorage(Scheme, optsGetter)
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
		"gardenerclusterkubeconfigs":        kubeconfigs.GardenerClusterKubeconfig,
		"gardenerclusterkubeconfigs/status": kubeconfigs.Status,
		// Authorization only: who may reach which target.
		targetaccess.ResourceShoots:   target.NewREST("shoot", "Shoot"),
		targetaccess.ResourceClusters: target.NewREST("cluster", "Cluster"),
	}
	if err := genericServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, err
	}
	return &Server{GenericAPIServer: genericServer}, nil
}
