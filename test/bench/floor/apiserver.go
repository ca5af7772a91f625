// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	generatedopenapi "github.com/clustergate/clustergate/pkg/generated/openapi"
	"github.com/clustergate/clustergate/pkg/proxy"
)

// GroupVersion is the floor's API: kube-apiserver reaches it through the
// APIService v1.floor.bench.clustergate.dev.
var GroupVersion = schema.GroupVersion{Group: "floor.bench.clustergate.dev", Version: "v1"}

// Target is the one resource, there only for its proxy subresource: any
// name reaches the one target.
type Target struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// DeepCopyObject copies t.
func (t *Target) DeepCopyObject() runtime.Object {
	c := &Target{TypeMeta: t.TypeMeta}
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return c
}

// TargetProxyOptions are targets/proxy's options: the path on the target.
type TargetProxyOptions struct {
	metav1.TypeMeta `json:",inline"`
	Path            string `json:"path,omitempty"`
}

// DeepCopyObject copies o.
func (o *TargetProxyOptions) DeepCopyObject() runtime.Object { c := *o; return &c }

// newScheme registers the floor's types, and how a connect request's query
// becomes its options.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(GroupVersion, &Target{}, &TargetProxyOptions{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	// The generic server's own types: errors, discovery.
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	err := scheme.AddConversionFunc((*url.Values)(nil), (*TargetProxyOptions)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*TargetProxyOptions).Path = a.(*url.Values).Get("path")
		return nil
	})
	return scheme, err
}

// openAPIDefinitions are clustergate's (which hold the meta types every
// resource refers to) and the floor's two, schemaless objects.
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generatedopenapi.GetOpenAPIDefinitions(ref)
	object := common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}}
	maps.Copy(defs, map[string]common.OpenAPIDefinition{"main.Target": object, "main.TargetProxyOptions": object})
	return defs
}

// runAPIServer serves the floor's API with the generic server's secure
// serving and delegated authentication and authorization as clustergate
// has them, and no storage, admission, audit or priority and fairness
// (clustergate turns the last off too).
func runAPIServer(args []string) error {
	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	kubeconfig, err := flags(args, func(fs *pflag.FlagSet) {
		serving.AddFlags(fs)
		authn.AddFlags(fs)
		authz.AddFlags(fs)
	})
	if err != nil {
		return err
	}
	errs := append(append(serving.Validate(), authn.Validate()...), authz.Validate()...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewRecommendedConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	cfg.FeatureGate = utilfeature.DefaultFeatureGate
	namer := openapi.NewDefinitionNamer(scheme)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, namer)
	if err := serving.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return err
	}
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, cfg.OpenAPIConfig); err != nil {
		return err
	}
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return err
	}
	// What clustergate counts as long-running through sessions/proxy.
	cfg.LongRunningFunc = func(r *http.Request, info *request.RequestInfo) bool {
		if info.IsResourceRequest && info.Subresource == "proxy" {
			return proxy.LongRunning(r, strings.Join(info.Parts[min(3, len(info.Parts)):], "/"))
		}
		return info.Verb == "watch"
	}
	server, err := cfg.Complete().New("floor-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	reverse, cut, err := targetProxy(kubeconfig)
	if err != nil {
		return err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(GroupVersion.Group, scheme, runtime.NewParameterCodec(scheme), codecs)
	group.VersionedResourcesStorageMap[GroupVersion.Version] = map[string]rest.Storage{
		"targets":       &targetREST{},
		"targets/proxy": &proxyREST{handler: cut.wrap(reverse)},
	}
	if err := server.InstallAPIGroup(&group); err != nil {
		return err
	}
	return server.PrepareRun().RunWithContext(context.Background())
}

// targetREST serves no Target: it is there for its subresource.
type targetREST struct{}

var (
	_ rest.Getter               = &targetREST{}
	_ rest.Scoper               = &targetREST{}
	_ rest.SingularNameProvider = &targetREST{}
)

func (*targetREST) New() runtime.Object     { return &Target{} }
func (*targetREST) Destroy()                {}
func (*targetREST) NamespaceScoped() bool   { return true }
func (*targetREST) GetSingularName() string { return "target" }
func (*targetREST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(GroupVersion.WithResource("targets").GroupResource(), name)
}

// proxyREST is targets/proxy: the request, as it is, to the target at the
// path below the subresource.
type proxyREST struct{ handler http.Handler }

var _ rest.Connecter = &proxyREST{}

func (*proxyREST) New() runtime.Object { return &TargetProxyOptions{} }
func (*proxyREST) Destroy()            {}
func (*proxyREST) ConnectMethods() []string {
	return []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
}
func (*proxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &TargetProxyOptions{}, true, "path"
}

func (p *proxyREST) Connect(_ context.Context, _ string, opts runtime.Object, _ rest.Responder) (http.Handler, error) {
	path := "/" + strings.TrimPrefix(opts.(*TargetProxyOptions).Path, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = path, ""
		for name := range r.Header {
			if strings.HasPrefix(name, "X-Remote-") {
				r.Header.Del(name)
			}
		}
		p.handler.ServeHTTP(w, r)
	}), nil
}
