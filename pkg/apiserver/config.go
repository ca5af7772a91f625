// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/union"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
	"github.com/clustergate/clustergate/pkg/dataplane"
	"github.com/clustergate/clustergate/pkg/frontproxy"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/intern"
)

// etcdPathPrefix is where the server keeps its objects in etcd.
const etcdPathPrefix = "/registry/clustergate.dev"

// NewRecommendedOptions returns the generic server's options as clustergate
// defaults them, with its admission plugins registered and ordered.
func NewRecommendedOptions() *genericoptions.RecommendedOptions {
	o := genericoptions.NewRecommendedOptions(etcdPathPrefix, Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	// Objects are kept in etcd as protobuf, as kube-apiserver keeps its own:
	// smaller, and cheaper to decode for the watch cache. JSON written by
	// earlier versions stays readable.
	o.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// The kube-apiserver in front of an aggregated server already applies
	// priority and fairness to every request it forwards.
	o.Features.EnablePriorityAndFairness = false
	// The watch cache keeps a copy-on-write snapshot of its tree at every
	// write, for LISTs at an older resourceVersion, until newer events push
	// the write out of its window, which an idle server never does, so the
	// copies of a burst of writes stay in the heap. Such LISTs (a continue
	// token, an exact resourceVersion) are rare here and are served from
	// etcd instead. --feature-gates=ListFromCacheSnapshot=true restores them.
	//
	// The estimate of the stored objects' sizes serves priority and
	// fairness's cost of a LIST, off here, and a metric: it keeps a map
	// entry per stored object (5 MB of the live heap with 10,000 Sessions
	// and 10,000 kubeconfigs) and rebuilds it every minute.
	// --feature-gates=SizeBasedListCostEstimate=true restores it, with
	// --enable-priority-and-fairness.
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(apiserverfeatures.ListFromCacheSnapshot):     false,
		string(apiserverfeatures.SizeBasedListCostEstimate): false,
	}))
	setUpAdmission(o)
	return o
}

// NewConfig builds the server's configuration from the generic server's
// options, completed and validated, and clustergate's own settings. It
// gives opts the storage codec before applying them, and reads the files
// that extra names (see ExtraConfig).
func NewConfig(opts *genericoptions.RecommendedOptions, extra ExtraConfig) (*Config, error) {
	serverConfig := genericapiserver.NewRecommendedConfig(Codecs)
	setOpenAPIConfigs(serverConfig)
	serverConfig.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	serverConfig.FeatureGate = utilfeature.DefaultFeatureGate
	if err := setStorageCodec(opts.Etcd); err != nil {
		return nil, err
	}
	// One Gardener client, and so one cache of projects' namespaces, for
	// TargetAccess and the controllers.
	if !extra.Standalone && extra.Controllers.Gardener.Project != "" {
		var err error
		if extra.gardener, err = gardener.NewClient(extra.Controllers.Gardener); err != nil {
			return nil, err
		}
	}
	opts.ExtraAdmissionInitializers = admissionInitializers(extra.targetAccessGardener())
	if err := opts.ApplyTo(serverConfig); err != nil {
		return nil, err
	}
	// As kube-apiserver does: compressing what the server sends itself (the
	// controllers' watches and writes) costs a flate writer per watch and
	// processor time on both ends for nothing.
	serverConfig.LoopbackClientConfig.DisableCompression = true
	keepFrontProxyVerifications(serverConfig)
	addFrontProxyReadyzCheck(serverConfig)
	serverConfig.LongRunningFunc = LongRunning
	extra.passNamespaceDown()
	if err := extra.readFiles(); err != nil {
		return nil, err
	}
	if extra.Standalone {
		serverConfig.AdmissionControl = standaloneAdmission(serverConfig.Authorization.Authorizer)
	}
	return &Config{GenericConfig: serverConfig, ExtraConfig: extra}, nil
}

// setStorageCodec makes the objects stored with etcd's --storage-media-type.
// The generic options keep objects in the codec given to
// NewRecommendedOptions, JSON; --storage-media-type is honoured only by
// kube-apiserver's own storage factory. Without this codec objects would be
// stored as JSON, which the watch cache's consistency check then decodes.
func setStorageCodec(etcd *genericoptions.EtcdOptions) error {
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  etcd.DefaultStorageMediaType,
		StorageSerializer: Codecs,
		StorageVersion:    v1alpha1.SchemeGroupVersion,
		MemoryVersion:     schema.GroupVersion{Group: v1alpha1.GroupName, Version: runtime.APIVersionInternal},
		Config:            etcd.StorageConfig,
	})
	if err != nil {
		return fmt.Errorf("--storage-media-type: %w", err)
	}
	// Every object the watch cache holds is decoded by this codec: interned,
	// the strings that repeat across objects are kept once.
	etcd.StorageConfig.Codec, etcd.StorageConfig.EncodeVersioner = intern.Codec{Codec: codec}, versioner
	return nil
}

// keepFrontProxyVerifications puts the front proxy's authenticator that
// keeps its certificate's verification (pkg/frontproxy) before the
// generic server's, which verifies it on every request. The generic one
// still authenticates every other request, and those of the front proxy
// that this one did not.
func keepFrontProxyVerifications(c *genericapiserver.RecommendedConfig) {
	rh, generic := c.Authentication.RequestHeaderConfig, c.Authentication.Authenticator
	if rh == nil || generic == nil {
		return
	}
	c.Authentication.Authenticator = union.New(group.NewAuthenticatedGroupAdder(frontproxy.New(rh, clock.RealClock{})), generic)
}

// addFrontProxyReadyzCheck keeps the server not ready until it knows the
// front proxy's CA. The CA comes from a ConfigMap informer that syncs only
// after the server listens; until then every request of the aggregator
// would be anonymous and refused.
func addFrontProxyReadyzCheck(c *genericapiserver.RecommendedConfig) {
	rh := c.Authentication.RequestHeaderConfig
	if rh == nil {
		return
	}
	c.AddReadyzChecks(healthz.NamedCheck("requestheader-client-ca", func(*http.Request) error {
		if _, ok := rh.CAContentProvider.VerifyOptions(); !ok {
			return errors.New("the front proxy's client CA is not loaded yet")
		}
		return nil
	}))
}

// ValidateDataPlaneAuthentication reads the data plane's
// AuthenticationConfiguration as the data plane reads it when it starts,
// so that one it would refuse fails before the server starts.
func ValidateDataPlaneAuthentication(cfg dataplane.Config) error {
	_, err := dataPlaneIssuers(cfg)
	return err
}

// dataPlaneIssuers reads how the data plane's JWT issuers name users.
func dataPlaneIssuers(cfg dataplane.Config) ([]dataplane.Issuer, error) {
	authn, _, err := dataplane.ReadAuthenticationConfig(cfg.AuthenticationConfigFile, cfg.SharedGardenIdentities)
	if err != nil {
		return nil, err
	}
	return dataplane.Issuers(authn), nil
}

// passNamespaceDown gives the server's namespace to the controllers: the
// sessions controller keeps credentials there, and the Lease goes there
// unless another namespace is given.
func (c *ExtraConfig) passNamespaceDown() {
	c.Controllers.Sessions.Namespace = c.Namespace
	if c.Controllers.LeaseNamespace == "" {
		c.Controllers.LeaseNamespace = c.Namespace
	}
}

// readFiles fills in what the settings hold in files: the CA bundles of
// session kubeconfigs and, from the data plane's AuthenticationConfiguration,
// how its issuers name users, which the Istio policies match and by which a
// session's kubeconfig points at the data plane or at the aggregated proxy.
func (c *ExtraConfig) readFiles() error {
	c.Controllers.Sessions.IstioPolicy.Issuers, c.SessionKubeconfig.DataPlaneUserPrefixes = nil, nil
	if c.DataPlane.AuthenticationConfigFile != "" {
		issuers, err := dataPlaneIssuers(c.DataPlane)
		if err != nil {
			return fmt.Errorf("--data-plane-authentication-config: %w", err)
		}
		for _, issuer := range issuers {
			c.Controllers.Sessions.IstioPolicy.Issuers = append(c.Controllers.Sessions.IstioPolicy.Issuers, sessions.IstioPolicyIssuer(issuer))
			c.SessionKubeconfig.DataPlaneUserPrefixes = append(c.SessionKubeconfig.DataPlaneUserPrefixes, issuer.UsernamePrefix)
		}
	}
	for _, ca := range []struct {
		flag, file string
		data       *[]byte
	}{{"--external-ca-file", c.ExternalCAFile, &c.SessionKubeconfig.CAData}, {"--data-plane-ca-file", c.DataPlaneCAFile, &c.SessionKubeconfig.DataPlaneCAData}} {
		if ca.file == "" {
			continue
		}
		data, err := os.ReadFile(ca.file)
		if err != nil {
			return fmt.Errorf("%s: %w", ca.flag, err)
		}
		*ca.data = data
	}
	return nil
}
