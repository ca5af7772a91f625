// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func validDescriptor() ComponentDescriptor {
	return DescriptorFor("v0.2.0", "0123456789abcdef0123456789abcdef01234567", time.Unix(1_700_000_000, 0), "registry.example.com/landscape", []Artifact{
		{Name: "clustergate-apiserver", Version: "v0.2.0", Type: "ociImage", Relation: "local",
			Access: Access{Type: "ociArtifact", ImageReference: "registry.example.com/clustergate/clustergate-apiserver:v0.2.0@" + digest},
			Digest: OCIDigest(digest)},
		{Name: "manifest", ExtraIdentity: map[string]string{"layout": "ha"}, Version: "v0.2.0", Type: "blob", Relation: "local",
			Access: Access{Type: "http", URL: "https://example.com/clustergate-ha.yaml", MediaType: "application/x-yaml"},
			Digest: BlobDigest(strings.TrimPrefix(digest, "sha256:"))},
		{Name: "manifest", ExtraIdentity: map[string]string{"layout": "single"}, Version: "v0.2.0", Type: "blob", Relation: "local",
			Access: Access{Type: "http", URL: "https://example.com/clustergate-single.yaml"},
			Digest: BlobDigest(strings.TrimPrefix(digest, "sha256:"))},
	})
}

func TestComponentDescriptorValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*ComponentDescriptor)
		want   string // a path of the error; empty: valid
	}{
		{"a release's descriptor", func(*ComponentDescriptor) {}, ""},
		{"another schema", func(d *ComponentDescriptor) { d.Meta.SchemaVersion = "v3alpha1" }, "meta.schemaVersion"},
		{"a name without a domain", func(d *ComponentDescriptor) { d.Component.Name = "clustergate" }, "component.name"},
		{"a name in capitals", func(d *ComponentDescriptor) { d.Component.Name = "github.com/ClusterGate/clustergate" }, "component.name"},
		{"a version that is none", func(d *ComponentDescriptor) { d.Component.Version = "latest" }, "component.version"},
		{"no provider", func(d *ComponentDescriptor) { d.Component.Provider = "" }, "component.provider"},
		{"a creation time that is none", func(d *ComponentDescriptor) { d.Component.CreationTime = "yesterday" }, "component.creationTime"},
		{"no repository contexts", func(d *ComponentDescriptor) { d.Component.RepositoryContexts = nil }, "component.repositoryContexts"},
		{"a repository context of another type", func(d *ComponentDescriptor) { d.Component.RepositoryContexts[0].Type = "CTF" }, "component.repositoryContexts[0].type"},
		{"a resource without relation", func(d *ComponentDescriptor) { d.Component.Resources[0].Relation = "" }, "component.resources[0].relation"},
		{"a resource name in capitals", func(d *ComponentDescriptor) { d.Component.Resources[0].Name = "Server" }, "component.resources[0].name"},
		{"two resources of one identity", func(d *ComponentDescriptor) { d.Component.Resources[2].ExtraIdentity["layout"] = "ha" }, "component.resources[2]"},
		{"an image without reference", func(d *ComponentDescriptor) { d.Component.Resources[0].Access.ImageReference = "" }, "component.resources[0].access.imageReference"},
		{"an image by tag only", func(d *ComponentDescriptor) {
			d.Component.Resources[0].Access.ImageReference = "registry.example.com/clustergate/clustergate-apiserver:v0.2.0"
		}, "component.resources[0].access.imageReference"},
		{"an unknown access", func(d *ComponentDescriptor) { d.Component.Resources[1].Access.Type = "s3" }, "component.resources[1].access.type"},
		{"a resource without digest", func(d *ComponentDescriptor) { d.Component.Resources[1].Digest = nil }, "component.resources[1].digest"},
		{"a digest of another hash", func(d *ComponentDescriptor) { d.Component.Resources[1].Digest.HashAlgorithm = "MD5" }, "component.resources[1].digest.hashAlgorithm"},
		{"a digest that is no SHA-256", func(d *ComponentDescriptor) { d.Component.Resources[1].Digest.Value = "abc" }, "component.resources[1].digest.value"},
		{"a source with a relation", func(d *ComponentDescriptor) { d.Component.Sources[0].Relation = "local" }, "component.sources[0].relation"},
		{"a source without ref", func(d *ComponentDescriptor) { d.Component.Sources[0].Access.Ref = "" }, "component.sources[0].access.ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDescriptor()
			tt.change(&d)
			errs := d.Validate()
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("Validate() = %v, want none", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("Validate() found nothing, want an error at %s", tt.want)
			}
			for _, e := range errs {
				if e.Field != tt.want {
					t.Errorf("Validate() = %v, want errors at %s only", errs, tt.want)
				}
			}
		})
	}
}

// TestComponentDescriptorMarshal: what Marshal writes is the descriptor
// and reads back as it, with the v2 layout's required empty lists.
func TestComponentDescriptorMarshal(t *testing.T) {
	out, err := validDescriptor().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"schemaVersion: v2", "componentReferences: []", "normalisationAlgorithm: ociArtifactDigest/v1", "name: github.com/clustergate/clustergate"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the descriptor lacks %q:\n%s", want, out)
		}
	}
	var back ComponentDescriptor
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		t.Fatal(err)
	}
	if errs := back.Validate(); len(errs) > 0 {
		t.Errorf("read back: %v", errs)
	}
	bad := validDescriptor()
	bad.Component.Version = "latest"
	if _, err := bad.Marshal(); err == nil || !strings.Contains(err.Error(), "component.version") {
		t.Errorf("Marshal of an invalid descriptor: %v", err)
	}
}
