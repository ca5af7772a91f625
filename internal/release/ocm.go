// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// ComponentName is clustergate's name as an OCM component.
const ComponentName = "github.com/clustergate/clustergate"

// ComponentDescriptor is an Open Component Model component descriptor,
// schema version v2 (the format gardener-landscape-kit and Gardener's
// OCM tooling read): what a release consists of, each artifact by
// digest.
type ComponentDescriptor struct {
	Meta      DescriptorMeta `json:"meta"`
	Component Component      `json:"component"`
}

// DescriptorMeta is the descriptor's schema version.
type DescriptorMeta struct {
	SchemaVersion string `json:"schemaVersion"`
}

// Component is a component version.
type Component struct {
	Name                string              `json:"name"`
	Version             string              `json:"version"`
	Provider            string              `json:"provider"`
	CreationTime        string              `json:"creationTime,omitempty"`
	RepositoryContexts  []RepositoryContext `json:"repositoryContexts"`
	Sources             []Artifact          `json:"sources"`
	ComponentReferences []any               `json:"componentReferences"`
	Resources           []Artifact          `json:"resources"`
}

// RepositoryContext is the OCI registry a component version is stored in.
type RepositoryContext struct {
	Type                 string `json:"type"`
	BaseURL              string `json:"baseUrl"`
	ComponentNameMapping string `json:"componentNameMapping,omitempty"`
}

// Artifact is a resource or source of a component.
type Artifact struct {
	Name          string            `json:"name"`
	ExtraIdentity map[string]string `json:"extraIdentity,omitempty"`
	Version       string            `json:"version"`
	Type          string            `json:"type"`
	// Relation is local for what the component builds, external for
	// what it ships of others; resources only.
	Relation string  `json:"relation,omitempty"`
	Labels   []Label `json:"labels,omitempty"`
	Access   Access  `json:"access"`
	Digest   *Digest `json:"digest,omitempty"`
}

// Label is a name and value on an artifact.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Access says where an artifact is: an OCI artifact by reference, a URL,
// or a git commit.
type Access struct {
	Type           string `json:"type"`
	ImageReference string `json:"imageReference,omitempty"`
	URL            string `json:"url,omitempty"`
	MediaType      string `json:"mediaType,omitempty"`
	RepoURL        string `json:"repoUrl,omitempty"`
	Ref            string `json:"ref,omitempty"`
	Commit         string `json:"commit,omitempty"`
}

// Digest is an artifact's digest as OCM normalises it.
type Digest struct {
	HashAlgorithm          string `json:"hashAlgorithm"`
	NormalisationAlgorithm string `json:"normalisationAlgorithm"`
	Value                  string `json:"value"`
}

// Normalisations of a digest: an OCI artifact's manifest digest, and a
// file's bytes.
const (
	OCIArtifactDigest = "ociArtifactDigest/v1"
	GenericBlobDigest = "genericBlobDigest/v1"
)

// OCIDigest is the digest of an OCI artifact, given as sha256:<hex>.
func OCIDigest(digest string) *Digest {
	return &Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: OCIArtifactDigest, Value: strings.TrimPrefix(digest, "sha256:")}
}

// BlobDigest is the digest of a file, given its SHA-256 in hex.
func BlobDigest(sha256 string) *Digest {
	return &Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: GenericBlobDigest, Value: sha256}
}

// DescriptorFor is the descriptor of a release: component version
// version of the commit revision made at created, with resources, from
// the git source of the version's tag.
func DescriptorFor(version, revision string, created time.Time, registry string, resources []Artifact) ComponentDescriptor {
	d := ComponentDescriptor{
		Meta: DescriptorMeta{SchemaVersion: "v2"},
		Component: Component{
			Name: ComponentName, Version: version, Provider: "clustergate", CreationTime: created.UTC().Format(time.RFC3339),
			RepositoryContexts:  []RepositoryContext{},
			ComponentReferences: []any{},
			Sources: []Artifact{{Name: "clustergate", Version: version, Type: "git",
				Access: Access{Type: "github", RepoURL: ComponentName, Ref: "refs/tags/" + version, Commit: revision}}},
			Resources: resources,
		},
	}
	if registry != "" {
		d.Component.RepositoryContexts = append(d.Component.RepositoryContexts,
			RepositoryContext{Type: "OCIRegistry", BaseURL: registry, ComponentNameMapping: "urlPath"})
	}
	return d
}

// Marshal validates the descriptor and returns its YAML.
func (d ComponentDescriptor) Marshal() ([]byte, error) {
	if errs := d.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("component descriptor: %w", errs.ToAggregate())
	}
	return yaml.Marshal(d)
}

// The component descriptor v2 schema's patterns: a component name is a
// DNS domain with a path, a version semantic with an optional v (and
// major or major.minor alone), an identity key lower case.
var (
	componentNamePattern = regexp.MustCompile(`^[a-z][-a-z0-9]*([.][a-z][-a-z0-9]*)*[.][a-z]{2,}(/[a-z][-a-z0-9_]*([.][a-z][-a-z0-9_]*)*)+$`)
	relaxedSemver        = regexp.MustCompile(`^v?(0|[1-9]\d*)(\.(0|[1-9]\d*))?(\.(0|[1-9]\d*))?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	identityKey          = regexp.MustCompile(`^[a-z0-9]([-_+a-z0-9]*[a-z0-9])?$`)
	hexSHA256            = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// Validate checks the descriptor against the rules of the component
// descriptor v2 schema that it uses, and that identities are unique,
// with the path of each violation.
func (d ComponentDescriptor) Validate() field.ErrorList {
	var errs field.ErrorList
	if d.Meta.SchemaVersion != "v2" {
		errs = append(errs, field.NotSupported(field.NewPath("meta", "schemaVersion"), d.Meta.SchemaVersion, []string{"v2"}))
	}
	c, path := d.Component, field.NewPath("component")
	if len(c.Name) > 255 || !componentNamePattern.MatchString(c.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), c.Name, "must be a DNS domain followed by a path, at most 255 characters"))
	}
	errs = append(errs, validateVersion(path.Child("version"), c.Version)...)
	if c.Provider == "" {
		errs = append(errs, field.Required(path.Child("provider"), ""))
	}
	if c.CreationTime != "" {
		if _, err := time.Parse(time.RFC3339, c.CreationTime); err != nil {
			errs = append(errs, field.Invalid(path.Child("creationTime"), c.CreationTime, "must be an RFC 3339 date-time"))
		}
	}
	if c.RepositoryContexts == nil {
		errs = append(errs, field.Required(path.Child("repositoryContexts"), "may be empty, not missing"))
	}
	for i, r := range c.RepositoryContexts {
		p := path.Child("repositoryContexts").Index(i)
		if r.Type != "OCIRegistry" && r.Type != "ociRegistry" {
			errs = append(errs, field.NotSupported(p.Child("type"), r.Type, []string{"OCIRegistry"}))
		}
		if r.BaseURL == "" {
			errs = append(errs, field.Required(p.Child("baseUrl"), ""))
		}
		if r.ComponentNameMapping != "" && r.ComponentNameMapping != "urlPath" && r.ComponentNameMapping != "sha256-digest" {
			errs = append(errs, field.NotSupported(p.Child("componentNameMapping"), r.ComponentNameMapping, []string{"urlPath", "sha256-digest"}))
		}
	}
	if c.ComponentReferences == nil {
		errs = append(errs, field.Required(path.Child("componentReferences"), "may be empty, not missing"))
	}
	if c.Sources == nil {
		errs = append(errs, field.Required(path.Child("sources"), "may be empty, not missing"))
	}
	errs = append(errs, validateArtifacts(path.Child("sources"), c.Sources, false)...)
	if c.Resources == nil {
		errs = append(errs, field.Required(path.Child("resources"), "may be empty, not missing"))
	}
	return append(errs, validateArtifacts(path.Child("resources"), c.Resources, true)...)
}

func validateVersion(path *field.Path, version string) field.ErrorList {
	if !relaxedSemver.MatchString(version) {
		return field.ErrorList{field.Invalid(path, version, "must be a semantic version, with an optional leading v")}
	}
	return nil
}

// validateArtifacts checks sources or resources: required fields,
// patterns, the access of its type, digests, and that no two share an
// identity (name and extra identity).
func validateArtifacts(path *field.Path, artifacts []Artifact, resources bool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, a := range artifacts {
		p := path.Index(i)
		if len(a.Name) < 2 || !identityKey.MatchString(a.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), a.Name, "must be lower case letters, digits, -, _ or +, at least 2 characters"))
		}
		for k := range a.ExtraIdentity {
			if len(k) < 2 || !identityKey.MatchString(k) {
				errs = append(errs, field.Invalid(p.Child("extraIdentity").Key(k), k, "must be an identity key"))
			}
		}
		identity := a.Name + fmt.Sprint(a.ExtraIdentity)
		if seen[identity] {
			errs = append(errs, field.Duplicate(p, identity))
		}
		seen[identity] = true
		errs = append(errs, validateVersion(p.Child("version"), a.Version)...)
		if a.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
		switch {
		case resources && a.Relation != "local" && a.Relation != "external":
			errs = append(errs, field.NotSupported(p.Child("relation"), a.Relation, []string{"local", "external"}))
		case !resources && a.Relation != "":
			errs = append(errs, field.Forbidden(p.Child("relation"), "sources have none"))
		}
		errs = append(errs, validateAccess(p.Child("access"), a.Access)...)
		if d := a.Digest; d != nil {
			dp := p.Child("digest")
			if d.HashAlgorithm != "SHA-256" {
				errs = append(errs, field.NotSupported(dp.Child("hashAlgorithm"), d.HashAlgorithm, []string{"SHA-256"}))
			}
			if d.NormalisationAlgorithm != OCIArtifactDigest && d.NormalisationAlgorithm != GenericBlobDigest {
				errs = append(errs, field.NotSupported(dp.Child("normalisationAlgorithm"), d.NormalisationAlgorithm, []string{OCIArtifactDigest, GenericBlobDigest}))
			}
			if !hexSHA256.MatchString(d.Value) {
				errs = append(errs, field.Invalid(dp.Child("value"), d.Value, "must be a SHA-256 in lower-case hex"))
			}
			if d.NormalisationAlgorithm == OCIArtifactDigest && !strings.HasSuffix(a.Access.ImageReference, "@sha256:"+d.Value) {
				errs = append(errs, field.Invalid(p.Child("access", "imageReference"), a.Access.ImageReference, "must name the artifact by its digest"))
			}
		} else if resources {
			// Not required by the schema; a landscape pins by digest.
			errs = append(errs, field.Required(p.Child("digest"), "every resource of a release is named by digest"))
		}
	}
	return errs
}

// validateAccess checks that an access has the fields its type needs.
func validateAccess(path *field.Path, a Access) field.ErrorList {
	var required map[string]string
	switch a.Type {
	case "ociArtifact", "ociRegistry":
		required = map[string]string{"imageReference": a.ImageReference}
	case "http":
		required = map[string]string{"url": a.URL}
	case "github":
		required = map[string]string{"repoUrl": a.RepoURL, "ref": a.Ref}
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), a.Type, []string{"ociArtifact", "http", "github"})}
	}
	var errs field.ErrorList
	for _, k := range []string{"imageReference", "url", "repoUrl", "ref"} {
		if v, ok := required[k]; ok && v == "" {
			errs = append(errs, field.Required(path.Child(k), "access of type "+a.Type))
		}
	}
	return errs
}
