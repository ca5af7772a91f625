// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// KubeconfigOptions says what the kubeconfigs of sessions point at.
type KubeconfigOptions struct {
	// ExternalURL is the control plane URL users reach the API with.
	ExternalURL string
	// CAData verifies ExternalURL; empty trusts the system roots.
	CAData []byte
	// DataPlaneURL, when set, is where users reach the data plane; the
	// kubeconfigs of sessions whose owners are data-plane identities then
	// point at the session's path there instead of the aggregated proxy.
	DataPlaneURL string
	// DataPlaneUserPrefixes are the user name prefixes of the data plane's
	// issuers: an owner whose name starts with one is a data-plane identity
	// ("" makes every owner one, for issuers that share the garden's names).
	DataPlaneUserPrefixes []string
	// DataPlaneCAData verifies DataPlaneURL; empty trusts the system roots.
	DataPlaneCAData []byte
	// ExecCommand and ExecArgs are the exec credential plugin (for example
	// kubelogin) that the kubeconfig's user runs: in data-plane kubeconfigs,
	// and in aggregated ones when the server has no data plane; empty, or
	// an aggregated kubeconfig beside a data plane, leaves the user for the
	// caller to fill in with their own credentials.
	ExecCommand string
	ExecArgs    []string
}

// KubeconfigREST serves sessions/kubeconfig: a kubeconfig that reaches the
// session's proxy and carries no credentials.
type KubeconfigREST struct {
	store  *genericregistry.Store
	config KubeconfigOptions
}

var (
	_ rest.Getter  = &KubeconfigREST{}
	_ rest.Storage = &KubeconfigREST{}
)

// New returns an empty SessionKubeconfig.
func (r *KubeconfigREST) New() runtime.Object { return &clustergate.SessionKubeconfig{} }

// Destroy does nothing: the main resource owns the storage.
func (r *KubeconfigREST) Destroy() {}

// Get returns the kubeconfig of a ready session.
func (r *KubeconfigREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	s := obj.(*clustergate.Session)
	if r.config.ExternalURL == "" && !r.config.dataPlane(s) {
		return nil, notReady(s, "the server was started without --external-url, and without --data-plane-external-url for an owner its data plane names, so it cannot say where the session is served")
	}
	if !apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
		return nil, notReady(s, "its credentials are being minted")
	}
	data, err := Kubeconfig(s, r.config)
	if err != nil {
		return nil, err
	}
	return &clustergate.SessionKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
		Kubeconfig: data,
	}, nil
}

// dataPlane tells whether the session's kubeconfig points at the data
// plane: the owner can reach it only there when the data plane's issuers
// name it, and a garden user only through the aggregated proxy.
func (cfg KubeconfigOptions) dataPlane(s *clustergate.Session) bool {
	if cfg.DataPlaneURL == "" {
		return false
	}
	for _, prefix := range cfg.DataPlaneUserPrefixes {
		if strings.HasPrefix(s.Spec.Owner.Username, prefix) {
			return true
		}
	}
	return false
}

// Kubeconfig builds the kubeconfig of a session: the data plane's path of
// the session for an owner the data plane names, the aggregated proxy
// otherwise; in the first namespace of a scoped session.
func Kubeconfig(s *clustergate.Session, cfg KubeconfigOptions) ([]byte, error) {
	name := fmt.Sprintf("session-%s-%s", s.Namespace, s.Name)
	kc := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{
		Server:                   strings.TrimSuffix(cfg.ExternalURL, "/") + v1alpha1.ProxyEndpoint(s.Namespace, s.Name),
		CertificateAuthorityData: cfg.CAData,
	}
	dataPlane := cfg.dataPlane(s)
	if dataPlane {
		cluster = &clientcmdapi.Cluster{
			Server:                   strings.TrimSuffix(cfg.DataPlaneURL, "/") + v1alpha1.DataPlaneSessionPath(s.Namespace, s.Name),
			CertificateAuthorityData: cfg.DataPlaneCAData,
		}
	}
	kc.Clusters[name] = cluster
	user := &clientcmdapi.AuthInfo{}
	if cfg.ExecCommand != "" && (dataPlane || cfg.DataPlaneURL == "") {
		user.Exec = &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: cfg.ExecCommand, Args: cfg.ExecArgs,
			InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
		}
	}
	kc.AuthInfos[name] = user
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	// A scoped session reaches only its namespaces: kubectl starts in the
	// first, rather than in default, where it would be refused.
	if s.Spec.Scope != nil && len(s.Spec.Scope.Namespaces) > 0 {
		kc.Contexts[name].Namespace = s.Spec.Scope.Namespaces[0]
	}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}
