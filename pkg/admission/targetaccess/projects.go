// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package targetaccess

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// ProjectNamespaces resolves a Gardener project to its namespace in the
// garden; *gardener.Projects is the real one.
type ProjectNamespaces interface {
	Namespace(ctx context.Context, project string) (string, error)
}

// Gardener is what the plugin knows of Gardener: the server's default
// project (--gardener-project) and the resolver of projects' namespaces.
// The zero value is a server without Gardener.
type Gardener struct {
	DefaultProject string
	Projects       ProjectNamespaces
}

// WantsGardener is a plugin that needs Gardener's projects.
type WantsGardener interface {
	SetGardener(Gardener)
}

// Initializer hands Gardener to the plugins that want it.
type Initializer struct {
	Gardener Gardener
}

var _ admission.PluginInitializer = Initializer{}

// Initialize hands plugin Gardener if it wants it.
func (i Initializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(WantsGardener); ok {
		w.SetGardener(i.Gardener)
	}
}

// grantNamespaces returns the namespaces in which a grant on a target
// counts for an object in namespace, in the order they are asked:
//
//   - a cluster target's: the object's namespace;
//   - a Shoot's: its project's namespace, as Gardener's Project names it,
//     where Gardener binds the project members' roles; and, for a Shoot of
//     the default project, the object's namespace too, as before projects
//     were named, unless that namespace is some project's: grants there
//     are that project's, and reach no other project's Shoots.
//
// So a grant for Shoot prod of project shop never reaches prod of project
// pay. An unknown project is refused on path (its field); a Gardener that
// cannot answer fails the request, unless the object's namespace already
// counts.
func (p *Plugin) grantNamespaces(ctx context.Context, a admission.Attributes, namespace string, shoot *clustergate.ShootReference, path *field.Path) ([]string, error) {
	if shoot == nil {
		return []string{namespace}, nil
	}
	var namespaces []string
	if (shoot.Project == "" || shoot.Project == p.gardener.DefaultProject) && !v1alpha1.IsProjectNamespace(namespace) {
		namespaces = append(namespaces, namespace)
	}
	if shoot.Project == "" || p.gardener.Projects == nil {
		if len(namespaces) == 0 {
			return nil, apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
				field.Invalid(path, shoot.Project, "the server reaches no Gardener project (--gardener-project)")})
		}
		return namespaces, nil
	}
	projectNamespace, err := p.gardener.Projects.Namespace(ctx, shoot.Project)
	switch {
	case err == nil:
	case len(namespaces) > 0:
		// The grants of the object's namespace may still let it in.
		return namespaces, nil
	case gardener.ReasonOf(err) == gardener.ProjectNotFound:
		return nil, apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{field.NotFound(path, shoot.Project)})
	default:
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("the namespace of Gardener project %q is unknown: %v", shoot.Project, err))
	}
	if !slices.Contains(namespaces, projectNamespace) {
		namespaces = append(namespaces, projectNamespace)
	}
	return namespaces, nil
}

// inNamespaces says where a grant was looked for, for a refusal: "in
// namespace garden-shop", "in namespace sre or garden-local".
func inNamespaces(namespaces []string) string {
	return "in namespace " + strings.Join(namespaces, " or ")
}
