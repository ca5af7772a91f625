// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command models-schema prints the OpenAPI v2 schema of the generated
// definitions. hack/update-codegen.sh feeds it to applyconfiguration-gen so
// that apply configurations know the structure of every type.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/clustergate/clustergate/pkg/generated/openapi"
)

func main() {
	if err := output(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func output() error {
	refFunc := func(name string) spec.Ref {
		return spec.MustCreateRef(fmt.Sprintf("#/definitions/%s", name))
	}
	defs := openapi.GetOpenAPIDefinitions(refFunc)
	schemaDefs := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// A definition may embed a separate v2 schema; the output is v2 only.
		if embedded, ok := def.Schema.Extensions[common.ExtensionV2Schema]; ok {
			if v2, ok := embedded.(spec.Schema); ok {
				schemaDefs[name] = v2
				continue
			}
		}
		schemaDefs[name] = def.Schema
	}
	data, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Definitions: schemaDefs,
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "clustergate", Version: "unversioned"}},
		Swagger:     "2.0",
	}})
	if err != nil {
		return fmt.Errorf("serializing definitions: %w", err)
	}
	_, err = os.Stdout.Write(data)
	return err
}
