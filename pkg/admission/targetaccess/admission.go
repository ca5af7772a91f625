// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package targetaccess holds the TargetAccess admission plugin: who may reach
// which target. A Session may reach its target at its access level only if
// its owner may, and, when someone else opens or extends it for the owner,
// only if they may too: the assigner types the owner's groups, so the
// owner's grants alone would be whatever grants the assigner can name. A
// GardenerClusterKubeconfig may keep a shoot's admin kubeconfig only for a
// user who may open admin sessions to that shoot.
//
// Both are asked of the authorizer, and so of RBAC in the core cluster, as
// the access level's verb on the virtual resources shoots and clusters of
// clustergate.dev, named after the shoot or the cluster's kubeconfig Secret,
// in the object's namespace for a cluster and in the Shoot's project's
// namespace for a Shoot (projects.go). A session scoped to some namespaces of its
// target may also be allowed namespace by namespace, by the verb on the name
// "<target>/<namespace>" (such as prod/shop): a Role can grant a level in a
// namespace of a target without the whole target. The resources are listed
// in discovery but never served, so that
// `kubectl auth can-i admin shoots.clustergate.dev/local` (and
// `kubectl auth can-i debugger shoots.clustergate.dev/prod/shop`, as kubectl
// splits at the first slash) answers and
// `kubectl create role --resource=shoots.clustergate.dev` works.
package targetaccess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/admission/authz"
	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/ownership"
)

// PluginName is the name of the plugin in --enable-admission-plugins.
const PluginName = "TargetAccess"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin is the TargetAccess admission plugin.
type Plugin struct {
	*admission.Handler
	authorizer authorizer.UnconditionalAuthorizer
	gardener   Gardener
}

var (
	_ admission.ValidationInterface            = &Plugin{}
	_ admission.InitializationValidator        = &Plugin{}
	_ initializer.WantsUnconditionalAuthorizer = &Plugin{}
	_ WantsGardener                            = &Plugin{}
)

// New returns the plugin; it needs an authorizer before use.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetUnconditionalAuthorizer sets the authorizer that decides access to targets.
func (p *Plugin) SetUnconditionalAuthorizer(a authorizer.UnconditionalAuthorizer) { p.authorizer = a }

// SetGardener sets the default project and the resolver of projects'
// namespaces; without them a Shoot's grants count only where they did
// before projects were named.
func (p *Plugin) SetGardener(g Gardener) { p.gardener = g }

// ValidateInitialization fails when no authorizer was set.
func (p *Plugin) ValidateInitialization() error {
	if p.authorizer == nil {
		return errors.New("TargetAccess needs an authorizer")
	}
	return nil
}

// Validate runs after every mutation, so it judges the owner and target the
// object is stored with. A Session's target and owner never change after
// create; its owner, and an extender who is not the owner, are judged again
// when it is extended. A
// GardenerClusterKubeconfig is judged again when its spec changes.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	// An extension is access for longer: the owner must still hold it.
	if a.GetResource().GroupResource() == clustergate.Resource("sessions") && a.GetSubresource() == "extension" && a.GetOperation() == admission.Update {
		s, ok := a.GetOldObject().(*clustergate.Session)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected a Session, got %T", a.GetOldObject()))
		}
		return p.validateSession(ctx, a, s)
	}
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case clustergate.Resource("sessions"):
		if a.GetOperation() != admission.Create {
			return nil
		}
		s, ok := a.GetObject().(*clustergate.Session)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected a Session, got %T", a.GetObject()))
		}
		return p.validateSession(ctx, a, s)
	case clustergate.Resource("gardenerclusterkubeconfigs"):
		k, ok := a.GetObject().(*clustergate.GardenerClusterKubeconfig)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected a GardenerClusterKubeconfig, got %T", a.GetObject()))
		}
		if old, ok := a.GetOldObject().(*clustergate.GardenerClusterKubeconfig); ok && apiequality.Semantic.DeepEqual(old.Spec, k.Spec) {
			return nil
		}
		return p.validateKubeconfig(ctx, a, k)
	}
	return nil
}

// validateSession asks whether the session's owner, as stamped or assigned
// with its groups, holds the access level's verb on the target, and, when
// the requester is someone else, whether the requester holds it too.
func (p *Plugin) validateSession(ctx context.Context, a admission.Attributes, s *clustergate.Session) error {
	if resource, _ := target(&s.Spec.Target); resource == "" {
		// Validation refused it before admission ran.
		return nil
	}
	owner := &user.DefaultInfo{Name: s.Spec.Owner.Username, UID: s.Spec.Owner.UID, Groups: s.Spec.Owner.Groups}
	if err := p.requireTarget(ctx, a, owner, s, ""); err != nil {
		return err
	}
	requester := a.GetUserInfo()
	if requester == nil {
		return admission.NewForbidden(a, errors.New("no authenticated user"))
	}
	// The owner's groups of an assigned session are the assigner's word.
	// Were the owner's grant enough, anyone who may assign could reach every
	// target some group reaches, by naming that group; so the assigner
	// needs the access level as much as the owner, as for kubeconfigs.
	if ownership.Is(requester, s.Spec.Owner) {
		return nil
	}
	return p.requireTarget(ctx, a, requester, s, fmt.Sprintf(" for %q", owner.Name))
}

// requireTarget asks whether u holds the access level of session s on its
// target, in one of the namespaces where grants on it count
// (grantNamespaces): the level's verb on the target's name, which covers
// every namespace of it, or, for a scoped session, on "<name>/<namespace>"
// for each namespace of its scope that the whole-target grant does not
// cover. So a grant on some namespaces of a target never opens the whole
// of it. forWhom (` for "carol"`) follows the target in the refusal of an
// assigner. The refusal ends with what the authorizer said, of the whole
// target first.
func (p *Plugin) requireTarget(ctx context.Context, a admission.Attributes, u user.Info, s *clustergate.Session, forWhom string) error {
	resource, name := target(&s.Spec.Target)
	verb := s.Spec.AccessLevel.Group
	where, err := p.grantNamespaces(ctx, a, s.Namespace, s.Spec.Target.Shoot, field.NewPath("spec", "target", "shoot", "project"))
	if err != nil {
		return err
	}
	allowed, why := p.askIn(ctx, u, verb, resource, name, where)
	if allowed {
		return nil
	}
	what := targetName(&s.Spec.Target)
	rule := fmt.Sprintf("the verb %q on %s.%s named %q", verb, resource, clustergate.GroupName, name)
	if s.Spec.Scope == nil {
		return admission.NewForbidden(a, fmt.Errorf("user %q may not open %q sessions to %s/%s in namespace %s%s: that needs %s %s%s",
			u.GetName(), verb, resource, what, s.Namespace, forWhom, rule, inNamespaces(where), why))
	}
	var missing, names []string
	for _, ns := range s.Spec.Scope.Namespaces {
		allowed, nsWhy := p.askIn(ctx, u, verb, resource, name+"/"+ns, where)
		if allowed {
			continue
		}
		missing = append(missing, ns)
		names = append(names, strconv.Quote(name+"/"+ns))
		if why == "" {
			why = nsWhy
		}
	}
	if len(missing) == 0 {
		return nil
	}
	scope := "namespace "
	if len(missing) > 1 {
		scope = "namespaces "
	}
	return admission.NewForbidden(a, fmt.Errorf("user %q may not open %q sessions to %s%s of %s/%s in namespace %s%s: that needs %s, or named %s, %s%s",
		u.GetName(), verb, scope, strings.Join(missing, ", "), resource, what, s.Namespace, forWhom, rule, strings.Join(names, " and "), inNamespaces(where), why))
}

// askIn asks whether u holds verb on resource name in one of namespaces,
// in their order, and returns what the authorizer said of the first.
func (p *Plugin) askIn(ctx context.Context, u user.Info, verb, resource, name string, namespaces []string) (allowed bool, why string) {
	for i, ns := range namespaces {
		ok, nsWhy := authz.Ask(ctx, p.authorizer, attributes(u, verb, resource, name, ns))
		if ok {
			return true, ""
		}
		if i == 0 {
			why = nsWhy
		}
	}
	return false, why
}

// validateKubeconfig asks whether the requester may open admin sessions to
// the shoot: the kept kubeconfig is Gardener's admin kubeconfig, readable by
// whoever reads Secrets in the namespace.
func (p *Plugin) validateKubeconfig(ctx context.Context, a admission.Attributes, k *clustergate.GardenerClusterKubeconfig) error {
	requester := a.GetUserInfo()
	if requester == nil {
		return admission.NewForbidden(a, errors.New("no authenticated user"))
	}
	shoot := k.Spec.Shoot.Name
	where, err := p.grantNamespaces(ctx, a, k.Namespace, &k.Spec.Shoot, field.NewPath("spec", "shoot", "project"))
	if err != nil {
		return err
	}
	if allowed, why := p.askIn(ctx, requester, v1alpha1.AccessLevelAdmin, v1alpha1.ResourceShoots, shoot, where); !allowed {
		return admission.NewForbidden(a, fmt.Errorf("user %q may not keep a kubeconfig of %s/%s in namespace %s: that needs the verb %q on %s.%s named %q %s%s",
			requester.GetName(), v1alpha1.ResourceShoots, v1alpha1.ShootTargetName(k.Spec.Shoot.Project, shoot), k.Namespace,
			v1alpha1.AccessLevelAdmin, v1alpha1.ResourceShoots, clustergate.GroupName, shoot, inNamespaces(where), why))
	}
	return nil
}

// target returns the virtual resource and name of a session target, or
// empty strings when none is set.
func target(t *clustergate.SessionTarget) (resource, name string) {
	switch {
	case t.Shoot != nil:
		return v1alpha1.ResourceShoots, t.Shoot.Name
	case t.Cluster != nil:
		return v1alpha1.ResourceClusters, t.Cluster.KubeconfigSecretRef.Name
	}
	return "", ""
}

// targetName is the target as refusals name it: a Shoot with its project.
func targetName(t *clustergate.SessionTarget) string {
	if t.Shoot != nil {
		return v1alpha1.ShootTargetName(t.Shoot.Project, t.Shoot.Name)
	}
	_, name := target(t)
	return name
}

func attributes(u user.Info, verb, resource, name, namespace string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            verb,
		APIGroup:        clustergate.GroupName,
		Resource:        resource,
		Namespace:       namespace,
		Name:            name,
		ResourceRequest: true,
	}
}
