// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionowner holds the SessionOwner admission plugin: it stamps the
// owner of a new Session from the requesting user, lets only users with the
// verb "assign" on sessions name someone else (and only those with the verb
// "assign-groups" give that owner groups they are not in themselves, or
// system groups), and lets only the owner, or users with the verb "revoke"
// on sessions, change or delete a session, or,
// in a namespace being deleted, whoever may delete sessions (the namespace
// controller). Through sessions/approval only holders of the verb "approve"
// decide, never on their own session or request, as CertificateSigningRequest
// approval asks for "approve" on the signer, and under the
// SessionApprovalPolicy the session keeps only the approvers it names, each
// once per request; through sessions/extension only
// holders of "extend" who own the session or could have assigned it extend
// it.
package sessionowner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/admission/authz"
	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
	"github.com/clustergate/clustergate/pkg/ownership"
)

// PluginName is the name of the plugin in --enable-admission-plugins.
const PluginName = "SessionOwner"

// systemGroupPrefix starts the groups Kubernetes reserves for itself, such
// as system:masters; none is an assigner's to hand out.
const systemGroupPrefix = "system:"

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
	// namespaces tells namespaces being deleted; nil without a core cluster.
	namespaces corelisters.NamespaceLister
}

var (
	_ admission.MutationInterface                  = &Plugin{}
	_ admission.InitializationValidator            = &Plugin{}
	_ initializer.WantsAuthorizer                  = &Plugin{}
	_ initializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ admission.ValidationInterface                = &Plugin{}
)

// New returns the plugin; it needs an authorizer before use.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
}

// SetAuthorizer sets the authorizer that decides the custom verbs.
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetExternalKubeInformerFactory reads namespaces from the core cluster's
// namespace cache, the one NamespaceLifecycle keeps.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	namespaces := f.Core().V1().Namespaces()
	p.namespaces = namespaces.Lister()
	p.SetReadyFunc(namespaces.Informer().HasSynced)
}

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
// only with the verb "assign" on sessions in the namespace, and with groups
// beyond the creator's own only with "assign-groups".
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	s, requester, err := sessionAndRequester(a, a.GetObject(), "")
	if s == nil || err != nil {
		return err
	}
	if owner := s.Spec.Owner.Username; owner == "" || owner == requester.GetName() {
		s.Spec.Owner = ownerOf(requester)
		return nil
	}
	return p.authorizeAssigned(ctx, a, requester, s)
}

// Validate checks the owner of a new session again after mutating webhooks
// ran, so that no webhook can hand a session to someone else, give an
// assigned owner groups the assigner may not give, or forge the creator's
// groups, on the creator's behalf. A change or delete of a session
// by anyone but its owner needs the verb "revoke"; for a delete collection
// this is asked per session.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	switch {
	case a.GetOperation() == admission.Update && a.GetSubresource() == "approval":
		return p.validateApproval(ctx, a)
	case a.GetOperation() == admission.Update && a.GetSubresource() == "extension":
		return p.validateExtension(ctx, a)
	case a.GetOperation() != admission.Create:
		return p.validateChange(ctx, a)
	}
	s, requester, err := sessionAndRequester(a, a.GetObject(), "")
	if s == nil || err != nil {
		return err
	}
	if s.Spec.Owner.Username != requester.GetName() {
		if err := p.authorizeAssigned(ctx, a, requester, s); err != nil {
			return err
		}
		logForeignGroups(ctx, requester, s)
		return nil
	}
	if !apiequality.Semantic.DeepEqual(s.Spec.Owner, ownerOf(requester)) {
		return admission.NewForbidden(a, errors.New("spec.owner: the uid and groups of an owner who is the creator must be the creator's own"))
	}
	return nil
}

// validateChange lets the owner change or delete their session, and anyone
// else only with the verb "revoke". The status is a part of the session too:
// only the server, which holds every verb, writes it.
func (p *Plugin) validateChange(ctx context.Context, a admission.Attributes) error {
	s, requester, err := sessionAndRequester(a, a.GetOldObject(), "status")
	if s == nil || err != nil || ownership.Is(requester, s.Spec.Owner) {
		return err
	}
	// Deleting a namespace deletes everything in it, revoked sessions
	// included: the namespace controller, which holds delete on every
	// resource and no custom verbs, must not be stopped here, or no
	// namespace with a session in it could ever be deleted. Whoever may
	// delete the namespace may end its sessions anyway.
	if a.GetOperation() == admission.Delete && p.terminating(s.Namespace) {
		return nil
	}
	return p.require(ctx, a, requester, s, v1alpha1.VerbRevoke, fmt.Sprintf("user %q may not change or delete session %s/%s owned by %q: that needs the verb %q on sessions in namespace %q",
		requester.GetName(), s.Namespace, s.Name, s.Spec.Owner.Username, v1alpha1.VerbRevoke, s.Namespace))
}

// terminating reports whether the namespace is being deleted.
func (p *Plugin) terminating(namespace string) bool {
	if p.namespaces == nil {
		return false
	}
	ns, err := p.namespaces.Get(namespace)
	return err == nil && ns.DeletionTimestamp != nil
}

// sessionAndRequester returns the Session obj of a request on sessions (or
// on the given subresource of sessions) and its requester, or nil for any
// other request.
func sessionAndRequester(a admission.Attributes, obj runtime.Object, subresource string) (*clustergate.Session, user.Info, error) {
	if a.GetResource().GroupResource() != clustergate.Resource("sessions") || (a.GetSubresource() != "" && a.GetSubresource() != subresource) {
		return nil, nil, nil
	}
	s, ok := obj.(*clustergate.Session)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Session, got %T", obj))
	}
	if a.GetUserInfo() == nil {
		return nil, nil, admission.NewForbidden(a, errors.New("no authenticated user to own or change the session"))
	}
	return s, a.GetUserInfo(), nil
}

// validateApproval lets holders of "approve" decide on a session, except on
// one they own or a request they made: four eyes. Under a
// SessionApprovalPolicy, only the approvers it names who share none of its
// excluded groups with the owner decide, each once per request.
func (p *Plugin) validateApproval(ctx context.Context, a admission.Attributes) error {
	s, requester, err := sessionAndRequester(a, a.GetOldObject(), "approval")
	if s == nil || err != nil {
		return err
	}
	// By name alone: a user recreated under the owner's name, with another
	// UID, is still no second pair of eyes.
	if ownership.Is(requester, clustergate.SessionOwner{Username: s.Spec.Owner.Username}) {
		return admission.NewForbidden(a, fmt.Errorf("user %q may not approve or deny their own session %s/%s: another approver must",
			requester.GetName(), s.Namespace, s.Name))
	}
	if pending := s.Status.PendingApproval(); pending != nil && ownership.Is(requester, clustergate.SessionOwner{Username: pending.RequestedBy}) {
		return admission.NewForbidden(a, fmt.Errorf("user %q may not approve or deny a request they made on session %s/%s: another approver must",
			requester.GetName(), s.Namespace, s.Name))
	}
	if err := p.require(ctx, a, requester, s, v1alpha1.VerbApprove, fmt.Sprintf(
		"user %q may not approve or deny session %s/%s: that needs the verb %q on sessions in namespace %q",
		requester.GetName(), s.Namespace, s.Name, v1alpha1.VerbApprove, s.Namespace)); err != nil {
		return err
	}
	if why := approvalpolicy.Refusal(s, requester.GetName(), requester.GetGroups()); why != "" {
		return admission.NewForbidden(a, fmt.Errorf("user %q may not approve or deny session %s/%s: %s", requester.GetName(), s.Namespace, s.Name, why))
	}
	if pending := s.Status.PendingApproval(); pending != nil && slices.ContainsFunc(pending.Decisions, func(d clustergate.ApproverDecision) bool {
		return d.Approver == requester.GetName()
	}) {
		return admission.NewForbidden(a, fmt.Errorf("user %q already decided on the pending request of session %s/%s: it needs %d distinct approvers",
			requester.GetName(), s.Namespace, s.Name, pending.RequiredApprovers()))
	}
	return nil
}

// validateExtension lets holders of "extend" extend a session they own; one
// owned by someone else needs what opening it for them would: "assign", and
// "assign-groups" when its owner has groups the extender could not give.
func (p *Plugin) validateExtension(ctx context.Context, a admission.Attributes) error {
	s, requester, err := sessionAndRequester(a, a.GetOldObject(), "extension")
	if s == nil || err != nil {
		return err
	}
	if err := p.require(ctx, a, requester, s, v1alpha1.VerbExtend, fmt.Sprintf(
		"user %q may not extend session %s/%s: that needs the verb %q on sessions in namespace %q",
		requester.GetName(), s.Namespace, s.Name, v1alpha1.VerbExtend, s.Namespace)); err != nil || ownership.Is(requester, s.Spec.Owner) {
		return err
	}
	if err := p.require(ctx, a, requester, s, v1alpha1.VerbAssign, fmt.Sprintf(
		"user %q may not extend session %s/%s owned by %q: that needs the verb %q on sessions in namespace %q too",
		requester.GetName(), s.Namespace, s.Name, s.Spec.Owner.Username, v1alpha1.VerbAssign, s.Namespace)); err != nil {
		return err
	}
	return p.authorizeGroups(ctx, a, requester, s, "extend")
}

// require asks whether requester holds verb on session s.
func (p *Plugin) require(ctx context.Context, a admission.Attributes, requester user.Info, s *clustergate.Session, verb, msg string) error {
	return authz.Require(ctx, p.authorizer, authorizer.AttributesRecord{
		User:            requester,
		Verb:            verb,
		APIGroup:        clustergate.GroupName,
		APIVersion:      a.GetResource().Version,
		Resource:        "sessions",
		Namespace:       s.Namespace,
		Name:            s.Name,
		ResourceRequest: true,
	}, a, msg)
}

// authorizeAssigned asks whether requester may open session s for its
// owner, someone else: "assign", and "assign-groups" for an owner with
// groups the requester could not vouch for.
func (p *Plugin) authorizeAssigned(ctx context.Context, a admission.Attributes, requester user.Info, s *clustergate.Session) error {
	if err := p.requireOnRequest(ctx, a, requester, v1alpha1.VerbAssign, fmt.Sprintf(
		"user %q may not open a session owned by %q: that needs the verb %q on sessions in namespace %q",
		requester.GetName(), s.Spec.Owner.Username, v1alpha1.VerbAssign, a.GetNamespace())); err != nil {
		return err
	}
	return p.authorizeGroups(ctx, a, requester, s, "open")
}

// authorizeGroups asks for "assign-groups" when the owner of s, someone
// else, has groups that requester may not give on their own word; action
// ("open", "extend") is what requester does to s, for the message.
func (p *Plugin) authorizeGroups(ctx context.Context, a admission.Attributes, requester user.Info, s *clustergate.Session, action string) error {
	foreign := foreignGroups(requester, s.Spec.Owner.Groups)
	if len(foreign) == 0 {
		return nil
	}
	return p.requireOnRequest(ctx, a, requester, v1alpha1.VerbAssignGroups, fmt.Sprintf(
		"user %q may not %s a session owned by %q with the groups %q: that needs the verb %q on sessions in namespace %q (without it, an assigned owner may have only groups %q is in, and no %s group but %s)",
		requester.GetName(), action, s.Spec.Owner.Username, foreign, v1alpha1.VerbAssignGroups, a.GetNamespace(), requester.GetName(), systemGroupPrefix, user.AllAuthenticated))
}

// foreignGroups returns, once each and in order, the groups among groups
// that requester may not give an owner without "assign-groups": those
// requester is not in, and every system group, which RBAC and kube-apiserver
// trust (system:masters passes every authorizer), except
// system:authenticated, which every authenticated user has.
func foreignGroups(requester user.Info, groups []string) []string {
	own := sets.New(requester.GetGroups()...)
	seen := sets.New[string]()
	var foreign []string
	for _, g := range groups {
		if seen.Has(g) {
			continue
		}
		seen.Insert(g)
		system := strings.HasPrefix(g, systemGroupPrefix) && g != user.AllAuthenticated
		if system || !own.Has(g) {
			foreign = append(foreign, g)
		}
	}
	return foreign
}

// logForeignGroups records an owner given groups beyond the assigner's
// own, which only "assign-groups" allows, for whoever looks into a grant
// that came through a group later.
func logForeignGroups(ctx context.Context, requester user.Info, s *clustergate.Session) {
	if foreign := foreignGroups(requester, s.Spec.Owner.Groups); len(foreign) > 0 {
		klog.FromContext(ctx).V(2).Info("Session assigned with groups beyond the assigner's own",
			"session", klog.KObj(s), "assigner", requester.GetName(), "owner", s.Spec.Owner.Username, "groups", foreign)
	}
}

// requireOnRequest asks whether requester holds verb on the sessions of
// request a; on create, a new session's name may still be empty.
func (p *Plugin) requireOnRequest(ctx context.Context, a admission.Attributes, requester user.Info, verb, msg string) error {
	return authz.Require(ctx, p.authorizer, authorizer.AttributesRecord{
		User:            requester,
		Verb:            verb,
		APIGroup:        clustergate.GroupName,
		APIVersion:      a.GetResource().Version,
		Resource:        "sessions",
		Namespace:       a.GetNamespace(),
		Name:            a.GetName(),
		ResourceRequest: true,
	}, a, msg)
}

func ownerOf(u user.Info) clustergate.SessionOwner {
	return clustergate.SessionOwner{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
}
