// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionaccess holds what the platform team decides about the
// access sessions get: the access levels, each with what it means on a
// whole target and what it means in one namespace, and the deny rules the
// proxy holds every session's requests to. They come from one file,
// --session-access-config, read at start like kube-apiserver's admission
// and authorization configuration: a level decides which groups the server
// mints into certificates and which roles it binds, so redefining one is a
// change of the server's own powers, reviewed and rolled out like one, not
// an object any RBAC grant could edit at run time.
package sessionaccess

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The apiVersion and kind of the configuration file.
const (
	APIVersion = "config.clustergate.dev/v1alpha1"
	Kind       = "SessionAccessConfiguration"
)

// The levels every server knows unless its configuration says otherwise:
// on a Shoot, Gardener's project admin and viewer groups; on a cluster
// target, the groups admin and viewer, which its admins bind; in a
// namespace, Kubernetes' own admin and view ClusterRoles.
const (
	LevelAdmin  = "admin"
	LevelViewer = "viewer"
)

// Configuration is the --session-access-config file.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	// Levels are the access levels a Session may ask for, by name.
	Levels []Level `json:"levels"`
	// DenyRules are requests the proxy refuses to every session, whatever
	// the target's RBAC says.
	DenyRules []DenyRule `json:"denyRules,omitempty"`
}

// Level is an access level: a name sessions ask for, a verb on the virtual
// shoots and clusters resources in authorization, and what it grants.
type Level struct {
	// Name is what spec.accessLevel.group names.
	Name string `json:"name"`
	// Group is the group the session's certificate carries on a cluster
	// target when the session is not scoped to namespaces; on a Shoot, the
	// levels admin and viewer carry Gardener's project groups instead,
	// others this group, which the Shoot's owner binds. Empty, a session of
	// the level must be scoped.
	Group string `json:"group,omitempty"`
	// NamespacedClusterRole is the ClusterRole of the target the server
	// binds to a scoped session in each of its namespaces. Empty, a session
	// of the level cannot be scoped.
	NamespacedClusterRole string `json:"namespacedClusterRole,omitempty"`
	// Moderated requires a moderator for the interactive streams of the
	// level's sessions (exec, attach, and the attach of an ephemeral
	// container): each waits until a user who holds the verb "moderate" on
	// the session, and is not its owner, follows it, and ends when the last
	// one stops; what cannot be followed (port-forward, a node's or pod's
	// proxy upgraded, ephemeral containers created with a command, writes
	// of pods and of workloads that make pods) is refused.
	Moderated bool `json:"moderated,omitempty"`
}

// DenyRule is a request the proxy refuses. Each list it sets must contain
// the request's value, or "*"; a list it leaves empty matches everything.
// Only resource requests match: discovery and other non-resource paths
// never do.
type DenyRule struct {
	// Name names the rule in the refusal, the request log and the metric.
	Name string `json:"name"`
	// Message says why, for the user who is refused.
	Message string `json:"message,omitempty"`
	// Verbs are Kubernetes verbs, as RBAC names them: get, list, watch,
	// create, update, patch, delete, deletecollection. An exec or attach
	// is a create over SPDY and a get over WebSocket.
	Verbs []string `json:"verbs,omitempty"`
	// APIGroups are API groups; "" is the core group.
	APIGroups []string `json:"apiGroups,omitempty"`
	// Resources are resources as RBAC names them: "secrets", "pods/exec"
	// for a subresource, "pods/*" for every subresource of pods.
	Resources []string `json:"resources,omitempty"`
	// Namespaces are the namespaces of namespaced requests; a rule that
	// sets them never matches a cluster-scoped request, except one for the
	// Namespace object of that name.
	Namespaces []string `json:"namespaces,omitempty"`
	// Names are the names of the objects.
	Names []string `json:"names,omitempty"`
	// Levels are the access levels of the sessions the rule holds.
	Levels []string `json:"levels,omitempty"`
	// Targets are the targets of the sessions the rule holds, as kubectl
	// get sessions prints them: shoot/<name> or cluster/<secret name>.
	Targets []string `json:"targets,omitempty"`
}

// maxNamespacedClusterRoleLength keeps a role name within what the API
// accepts for an object name.
const maxNamespacedClusterRoleLength = 253

// Default is the configuration of a server started without
// --session-access-config: admin and viewer, each usable whole-target and
// scoped, and no deny rules.
func Default() *Configuration {
	return FromGroups([]string{LevelAdmin, LevelViewer})
}

// FromGroups is the configuration --session-access-groups gives, so that
// servers started with it keep working: each group a level of its own
// name, admin and viewer also scoped to Kubernetes' admin and view roles.
func FromGroups(groups []string) *Configuration {
	c := &Configuration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	for _, g := range groups {
		l := Level{Name: g, Group: g}
		switch g {
		case LevelAdmin:
			l.NamespacedClusterRole = "admin"
		case LevelViewer:
			l.NamespacedClusterRole = "view"
		}
		c.Levels = append(c.Levels, l)
	}
	return c
}

// Load reads and validates a configuration file. Unknown fields are
// errors: a misspelt deny rule field would otherwise deny nothing.
func Load(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Configuration{}
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return c, nil
}

// Validate reports every problem of the configuration with its path.
func (c *Configuration) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion || c.Kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), c.APIVersion+", "+c.Kind,
			fmt.Sprintf("must be apiVersion %s, kind %s", APIVersion, Kind)))
	}
	levelsPath := field.NewPath("levels")
	if len(c.Levels) == 0 {
		errs = append(errs, field.Required(levelsPath, "at least one access level is needed"))
	}
	names := sets.New[string]()
	for i, l := range c.Levels {
		p := levelsPath.Index(i)
		errs = append(errs, validateVerbName(l.Name, p.Child("name"))...)
		if names.Has(l.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), l.Name))
		}
		names.Insert(l.Name)
		if l.Group == "" && l.NamespacedClusterRole == "" {
			errs = append(errs, field.Required(p, "a level needs a group, a namespacedClusterRole or both"))
		}
		if r := l.NamespacedClusterRole; r != "" && len(r) > maxNamespacedClusterRoleLength {
			errs = append(errs, field.TooLong(p.Child("namespacedClusterRole"), r, maxNamespacedClusterRoleLength))
		}
	}
	rulesPath := field.NewPath("denyRules")
	ruleNames := sets.New[string]()
	for i, r := range c.DenyRules {
		p := rulesPath.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if ruleNames.Has(r.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		ruleNames.Insert(r.Name)
		if len(r.Verbs)+len(r.APIGroups)+len(r.Resources)+len(r.Namespaces)+len(r.Names) == 0 {
			errs = append(errs, field.Required(p, "a deny rule must name at least one of verbs, apiGroups, resources, namespaces or names"))
		}
		for j, l := range r.Levels {
			if !names.Has(l) {
				errs = append(errs, field.NotSupported(p.Child("levels").Index(j), l, sets.List(names)))
			}
		}
	}
	return errs
}

// validateVerbName checks a level's name, which RBAC rules name as a verb
// and which --session-access-groups took as it was, so it is held only to
// what a verb cannot be.
func validateVerbName(name string, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "")}
	case strings.ContainsAny(name, "*/ \t\n"):
		return field.ErrorList{field.Invalid(p, name, "may not contain '*', '/' or white space: RBAC names the level as a verb")}
	}
	return nil
}

// Level returns the level of that name.
func (c *Configuration) Level(name string) (Level, bool) {
	i := slices.IndexFunc(c.Levels, func(l Level) bool { return l.Name == name })
	if i < 0 {
		return Level{}, false
	}
	return c.Levels[i], true
}

// Groups are the names of all levels, of those that may hold on a whole
// target and of those that may be scoped, for the API's validation.
func (c *Configuration) Groups() (all, wholeTarget, scopable sets.Set[string]) {
	all, wholeTarget, scopable = sets.New[string](), sets.New[string](), sets.New[string]()
	for _, l := range c.Levels {
		all.Insert(l.Name)
		if l.WholeTarget() {
			wholeTarget.Insert(l.Name)
		}
		if l.Scopable() {
			scopable.Insert(l.Name)
		}
	}
	return all, wholeTarget, scopable
}

// WholeTarget reports whether a session of the level may reach its whole
// target, unscoped.
func (l Level) WholeTarget() bool { return l.Group != "" }

// RequiresModerator reports whether the sessions of the level named name
// need a moderator for their interactive streams; a nil configuration, or
// an unknown level, needs none.
func (c *Configuration) RequiresModerator(name string) bool {
	if c == nil {
		return false
	}
	l, ok := c.Level(name)
	return ok && l.Moderated
}

// Scopable reports whether a session of the level may be scoped to
// namespaces.
func (l Level) Scopable() bool { return l.NamespacedClusterRole != "" }
