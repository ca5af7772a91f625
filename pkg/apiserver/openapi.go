// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	generatedopenapi "github.com/clustergate/clustergate/pkg/generated/openapi"
)

// setOpenAPIConfigs publishes the OpenAPI v2 and v3 documents of the group
// from the generated definitions, named after the scheme's types; the v3
// one slimmed (slimOpenAPIV3).
func setOpenAPIConfigs(c *genericapiserver.RecommendedConfig) {
	namer := openapi.NewDefinitionNamer(Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "clustergate"
	c.OpenAPIConfig.Info.Version = v1alpha1.SchemeGroupVersion.Version
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "clustergate"
	c.OpenAPIV3Config.Info.Version = v1alpha1.SchemeGroupVersion.Version
	slimOpenAPIV3(c.OpenAPIV3Config)
}

// deprecatedWatchPrefix is where the generic server serves the deprecated
// watch paths (/apis/<group>/<version>/watch/...). They stay served, but
// are not published in the OpenAPI v3 document: clients watch with
// ?watch=true on the list paths, and CustomResourceDefinitions never
// published them either.
var deprecatedWatchPrefix = "/apis/" + v1alpha1.SchemeGroupVersion.String() + "/watch/"

// slimOpenAPIV3 makes the published OpenAPI v3 document of the group version
// small, because kubectl reads it once per object it creates or applies:
// cli-runtime's field validation check unmarshals the whole document for
// every object (kubernetes/kubernetes#127095), so the document's size is
// paid on every create. It leaves the deprecated watch paths out and
// publishes each query and path parameter once, under
// components.parameters, referred to from the operations.
//
// PATCH operations keep their parameters inline: kubectl looks for
// fieldValidation among a PATCH operation's own parameters (it resolves
// only Swagger 2 style #/parameters/ references), and falls back to slow
// client-side validation when it does not find it.
func slimOpenAPIV3(config *common.OpenAPIV3Config) {
	config.IgnorePrefixes = append(config.IgnorePrefixes, deprecatedWatchPrefix)
	config.PostProcessSpec = shareParameters
}

// shareParameters moves the parameters of every operation but PATCH, and of
// every path, into components.parameters, one entry per distinct
// parameter, and refers to them.
func shareParameters(doc *spec3.OpenAPI) (*spec3.OpenAPI, error) {
	if doc.Paths == nil {
		return doc, nil
	}
	if doc.Components == nil {
		doc.Components = &spec3.Components{}
	}
	if doc.Components.Parameters == nil {
		doc.Components.Parameters = map[string]*spec3.Parameter{}
	}
	share := func(params []*spec3.Parameter) error {
		for i, p := range params {
			if p == nil || p.Ref.String() != "" {
				continue
			}
			key, err := parameterKey(p)
			if err != nil {
				return err
			}
			doc.Components.Parameters[key] = p
			params[i] = &spec3.Parameter{Refable: spec.Refable{Ref: spec.MustCreateRef("#/components/parameters/" + key)}}
		}
		return nil
	}
	for _, path := range doc.Paths.Paths {
		if path == nil {
			continue
		}
		if err := share(path.Parameters); err != nil {
			return nil, err
		}
		for _, op := range []*spec3.Operation{path.Get, path.Put, path.Post, path.Delete, path.Options, path.Head, path.Trace} {
			if op == nil {
				continue
			}
			if err := share(op.Parameters); err != nil {
				return nil, err
			}
		}
	}
	return doc, nil
}

// parameterKey names a parameter by its name and place and a hash of the
// whole of it, as kube-apiserver's Swagger 2 document names its shared
// parameters (limit-1NfNmdNH): equal parameters share one key, parameters
// of one name that differ (the name of a Session, of a
// GardenerClusterKubeconfig) get one each.
func parameterKey(p *spec3.Parameter) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("parameter %s: %w", p.Name, err)
	}
	sum := sha256.Sum256(data)
	return p.Name + "-" + p.In + "-" + base64.RawURLEncoding.EncodeToString(sum[:6]), nil
}
