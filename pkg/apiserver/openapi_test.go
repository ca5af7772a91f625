// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
)

func param(name, in, description string) *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{Name: name, In: in, Description: description}}
}

func TestShareParameters(t *testing.T) {
	limit := func() *spec3.Parameter { return param("limit", "query", "maximum number of responses") }
	doc := &spec3.OpenAPI{Paths: &spec3.Paths{Paths: map[string]*spec3.Path{
		"/sessions": {PathProps: spec3.PathProps{
			Parameters: []*spec3.Parameter{param("namespace", "path", "object name and auth scope")},
			Get:        &spec3.Operation{OperationProps: spec3.OperationProps{Parameters: []*spec3.Parameter{limit()}}},
			Post:       &spec3.Operation{OperationProps: spec3.OperationProps{Parameters: []*spec3.Parameter{param("fieldValidation", "query", "how to treat unknown fields")}}},
		}},
		"/sessions/{name}": {PathProps: spec3.PathProps{
			Parameters: []*spec3.Parameter{param("name", "path", "name of the Session")},
			Patch:      &spec3.Operation{OperationProps: spec3.OperationProps{Parameters: []*spec3.Parameter{param("fieldValidation", "query", "how to treat unknown fields")}}},
		}},
		"/kubeconfigs": {PathProps: spec3.PathProps{
			Parameters: []*spec3.Parameter{param("name", "path", "name of the GardenerClusterKubeconfig")},
			Get:        &spec3.Operation{OperationProps: spec3.OperationProps{Parameters: []*spec3.Parameter{limit()}}},
		}},
	}}}
	doc, err := shareParameters(doc)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(p *spec3.Parameter) *spec3.Parameter {
		ref := p.Ref.String()
		if ref == "" {
			return p
		}
		shared := doc.Components.Parameters[strings.TrimPrefix(ref, "#/components/parameters/")]
		if !strings.HasPrefix(ref, "#/components/parameters/") || shared == nil {
			t.Fatalf("reference %q does not resolve", ref)
		}
		return shared
	}
	paths := doc.Paths.Paths
	tests := []struct {
		name      string
		got       *spec3.Parameter
		shared    bool
		wantName  string
		wantBrief string
	}{
		{"list's query parameter", paths["/sessions"].Get.Parameters[0], true, "limit", "maximum number of responses"},
		{"create's query parameter", paths["/sessions"].Post.Parameters[0], true, "fieldValidation", "how to treat unknown fields"},
		{"path parameter", paths["/sessions"].Parameters[0], true, "namespace", "object name and auth scope"},
		{"name of a Session", paths["/sessions/{name}"].Parameters[0], true, "name", "name of the Session"},
		{"name of a kubeconfig", paths["/kubeconfigs"].Parameters[0], true, "name", "name of the GardenerClusterKubeconfig"},
		{"PATCH keeps its own, where kubectl looks", paths["/sessions/{name}"].Patch.Parameters[0], false, "fieldValidation", "how to treat unknown fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if shared := tt.got.Ref.String() != ""; shared != tt.shared {
				t.Fatalf("shared = %v, want %v", shared, tt.shared)
			}
			p := resolve(tt.got)
			if p.Name != tt.wantName || p.Description != tt.wantBrief {
				t.Errorf("resolves to %s %q, want %s %q", p.Name, p.Description, tt.wantName, tt.wantBrief)
			}
		})
	}
	// Equal parameters are published once; the two names differ.
	if got := len(doc.Components.Parameters); got != 5 {
		t.Errorf("%d shared parameters, want 5 (limit, fieldValidation, namespace, two names)", got)
	}
	if paths["/sessions"].Get.Parameters[0].Ref.String() != paths["/kubeconfigs"].Get.Parameters[0].Ref.String() {
		t.Error("the same limit parameter of two lists is published twice")
	}
}
