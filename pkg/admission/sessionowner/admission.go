// Package sessionowner holds the SessionOwner admission plugin: it stamps the
// owner of a new Session from the requesting user, and lets only users with
// the verb "assign" on sessions name someone else.
package sessionowner

import (
	"context"
	"errors"
	"fmt"
	"io"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// PluginName is the name of the plugin in --enable-admission-plugins.
const PluginName = "SessionOwner"

// VerbAssign is the custom verb on sessions that allows naming another owner.
const VerbAssign = "assign"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin is the SessionOwner admission plugin.
type Plugin struct {
	*admission.Handler
	authorizer authorizer.Authorizer
}

var (
	_ admission.MutationInterface       = &Plugin{}
	_ admission.InitializationValidator = &Plugin{}
	_ initializer.WantsAuthorizer       = &Plugin{}
	_ admission.ValidationInterface     = &Plugin{}
)

// New returns the plugin; it needs an authorizer before use.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create)}
}

// SetAuthorizer sets the authorizer that decides the verb "assign".
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// ValidateInitialization fails when no authorizer was set.
func (p *Plugin) ValidateInitialization() error {
	if p.authorizer == nil {
		return errors.New("SessionOwner needs an authorizer")
	}
	return nil
}

// Admit stamps the owner of a new Session. A creator who names nobody, or
// names themselves, becomes the owner with their real UID and groups, so
// nobody can claim groups they are not in. Naming someone else is allowed
// only with the verb "assign" on sessions in the namespace.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	s, requester, err := sessionAndRequester(a)
	if s == nil || err != nil {
		return err
	}
	if owner := s.Spec.Owner.Username; owner == "" || owner == requester.GetName() {
		s.Spec.Owner = ownerOf(requester)
		return nil
	}
	return p.authorizeAssign(ctx, a, requester, s.Spec.Owner.Username)
}

// Validate checks the owner again after mutating webhooks ran, so that no
// webhook can hand a session to someone else, or forge the creator's groups,
// on the creator's behalf.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	s, requester, err := sessionAndRequester(a)
	if s == nil || err != nil {
		return err
	}
	if s.Spec.Owner.Username != requester.GetName() {
		return p.authorizeAssign(ctx, a, requester, s.Spec.Owner.Username)
	}
	if !apiequality.Semantic.DeepEqual(s.Spec.Owner, ownerOf(requester)) {
		return admission.NewForbidden(a, errors.New("spec.owner: the uid and groups of an owner who is the creator must be the creator's own"))
	}
	return nil
}

// sessionAndRequester returns the Session of a create request and its
// requester, or nil for any other request.
func sessionAndRequester(a admission.Attributes) (*clustergate.Session, user.Info, error) {
	if a.GetResource().GroupResource() != clustergate.Resource("sessions") || a.GetSubresource() != "" {
		return nil, nil, nil
	}
	s, ok := a.GetObject().(*clustergate.Session)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Session, got %T", a.GetObject()))
	}
	if a.GetUserInfo() == nil {
		return nil, nil, admission.NewForbidden(a, errors.New("no authenticated user to own the session"))
	}
	return s, a.GetUserInfo(), nil
}

func (p *Plugin) authorizeAssign(ctx context.Context, a admission.Attributes, requester user.Info, owner string) error {
	decision, reason, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            requester,
		Verb:            VerbAssign,
		APIGroup:        clustergate.GroupName,
		APIVersion:      a.GetResource().Version,
		Resource:        "sessions",
		Namespace:       a.GetNamespace(),
		Name:            a.GetName(),
		ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	msg := fmt.Sprintf("user %q may not open a session owned by %q: that needs the verb %q on sessions in namespace %q",
		requester.GetName(), owner, VerbAssign, a.GetNamespace())
	if reason != "" {
		msg += ": " + reason
	}
	if err != nil {
		msg += fmt.Sprintf(" (authorization failed: %v)", err)
	}
	return admission.NewForbidden(a, errors.New(msg))
}

func ownerOf(u user.Info) clustergate.SessionOwner {
	return clustergate.SessionOwner{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
}
