// Package storage holds the REST storage of Sessions and their status on etcd.
package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/session"
	"github.com/clustergate/clustergate/pkg/registry/status"
)

// SessionStorage holds the storage of the sessions resource and its subresources.
type SessionStorage struct {
	// Session serves sessions.
	Session *REST
	// Status serves sessions/status.
	Status *status.StatusREST
	// Proxy serves sessions/proxy.
	Proxy *ProxyREST
	// Kubeconfig serves sessions/kubeconfig.
	Kubeconfig *KubeconfigREST
}

// ProxyConfig configures the proxy and kubeconfig subresources.
type ProxyConfig struct {
	// Registry tracks the open connections of this replica.
	Registry *proxy.Registry
	// Backends finds how to reach a session's target; nil when the server
	// keeps no credentials (standalone).
	Backends Backends
	// Kubeconfig says what session kubeconfigs point at.
	Kubeconfig KubeconfigConfig
}

// NewStorage returns the storage of Sessions under the server's policy.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, policy validation.SessionPolicy, proxyConfig ProxyConfig) (SessionStorage, error) {
	strategy := session.NewStrategy(scheme, policy)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clustergate.Session{} },
		NewListFunc:               func() runtime.Object { return &clustergate.SessionList{} },
		PredicateFunc:             session.Match,
		DefaultQualifiedResource:  clustergate.Resource("sessions"),
		SingularQualifiedResource: clustergate.Resource("session"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: session.NewTableConvertor(time.Now),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: session.GetAttrs}); err != nil {
		return SessionStorage{}, err
	}
	return SessionStorage{
		Session:    &REST{Store: store},
		Status:     status.NewStatusREST(store, session.NewStatusStrategy(strategy)),
		Proxy:      &ProxyREST{store: store, backends: proxyConfig.Backends, registry: proxyConfig.Registry, clock: clock.RealClock{}},
		Kubeconfig: &KubeconfigREST{store: store, config: proxyConfig.Kubeconfig},
	}, nil
}

// REST serves the sessions resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type "kubectl get sess".
func (*REST) ShortNames() []string { return []string{"sess"} }

// Categories puts sessions into "kubectl get clustergate".
func (*REST) Categories() []string { return []string{"clustergate"} }
