// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// EnforceAccess holds every proxied request, of every session, to the deny
// rules of access (nil: none). A session's scope is held regardless: it is
// the session's own.
func (r *Tracker) EnforceAccess(access *sessionaccess.Configuration) {
	r.access = access
	if access == nil {
		return
	}
	// Every rule's series exists from the start at zero.
	for _, rule := range access.DenyRules {
		deniedRequests.WithLabelValues(rule.Name)
	}
}

// The reasons refused_requests_total counts access refusals by.
const (
	reasonScope     = "scope"
	reasonDeny      = "deny"
	reasonDiscovery = "discovery"
)

// accessRefusal is a request the session's scope or a deny rule refuses,
// or one they cannot decide on: the Status that answers it, and its reason
// in refused_requests_total.
type accessRefusal struct {
	*apierrors.StatusError
	reason string
}

// sessionProxy is what access refusals name as forbidden.
var sessionProxy = schema.GroupResource{Group: "clustergate.dev", Resource: "sessions/proxy"}

// readVerbs are the verbs a scoped session may use on cluster-scoped
// resources: the target's RBAC decides on them.
var readVerbs = sets.New("get", "list", "watch")

// checkAccess refuses, before it takes a place or reaches the target, a
// request outside the session's scope or held by a deny rule. A session
// without a scope, on a server without deny rules, pays nothing: its
// request is not even parsed.
func (r *Tracker) checkAccess(ctx context.Context, t Target, tr *targetRequest) error {
	rules := r.access != nil && len(r.access.DenyRules) > 0
	if !rules && len(t.Scope) == 0 {
		return nil
	}
	info, err := tr.requestInfo()
	if err != nil {
		// Only a path the target answers with 404 fails to parse; not
		// knowing what it does, the proxy does not pass it on.
		reason := reasonDeny
		if len(t.Scope) > 0 {
			reason = reasonScope
		}
		return &accessRefusal{apierrors.NewBadRequest(fmt.Sprintf("session %s/%s: clustergate cannot tell what %s does on the target: %v",
			t.Namespace, t.Name, info.Path, err)), reason}
	}
	if !info.IsResourceRequest {
		// Discovery, /version, /openapi and the like: the target's RBAC
		// decides.
		return nil
	}
	c := &accessCheck{ctx: ctx, tracker: r, target: t, info: info}
	if rules {
		if err := c.denyRules(); err != nil {
			return err
		}
	}
	if len(t.Scope) > 0 {
		return c.scope()
	}
	return nil
}

// accessCheck is one request held to its session's scope and the deny
// rules, which share what the target's discovery says of its resource.
type accessCheck struct {
	ctx     context.Context
	tracker *Tracker
	target  Target
	info    *request.RequestInfo

	// looked, namespaced and listed are what discovery said of the
	// request's resource, once looked up.
	looked, namespaced, listed bool
}

// allNamespaces tells whether the request, without a namespace, reaches
// every namespace: its resource is namespaced, or the target does not list
// it, so that it may be. A request in a namespace never does.
func (c *accessCheck) allNamespaces() (all, listed bool, err error) {
	if c.info.Namespace != "" {
		return false, true, nil
	}
	if !c.looked {
		i := c.info
		c.namespaced, c.listed, err = c.tracker.discovery.namespaced(c.ctx, c.target, i.APIGroup, i.APIVersion, i.Resource)
		if err != nil {
			t := c.target
			return false, false, &accessRefusal{apierrors.NewServiceUnavailable(fmt.Sprintf(
				"session %s/%s: clustergate cannot tell whether %s is namespaced, which its scope and deny rules need to know: the target's discovery failed: %v",
				t.Namespace, t.Name, resourceName(i), err)), reasonDiscovery}
		}
		c.looked = true
	}
	return c.namespaced || !c.listed, c.listed, nil
}

// denyRules refuses a request a deny rule holds. A request without a
// namespace is held by a rule that names namespaces only when it reaches
// them all, which discovery tells; it is asked only when such a rule
// would hold the request.
func (c *accessCheck) denyRules() error {
	req := sessionaccess.Request{Info: c.info, Level: c.target.Level, Target: c.target.TargetName}
	rule := c.tracker.access.Denied(req)
	if rule == nil && c.info.Namespace == "" {
		req.AllNamespaces = true
		if candidate := c.tracker.access.Denied(req); candidate != nil {
			all, _, err := c.allNamespaces()
			if err != nil {
				return err
			}
			if all {
				rule = candidate
			}
		}
	}
	if rule == nil {
		return nil
	}
	deniedRequests.WithLabelValues(rule.Name).Inc()
	msg := "denied by clustergate rule " + rule.Name
	if rule.Message != "" {
		msg += ": " + rule.Message
	}
	t := c.target
	return &accessRefusal{apierrors.NewForbidden(sessionProxy, t.Name, fmt.Errorf("session %s/%s: %s", t.Namespace, t.Name, msg)), reasonDeny}
}

// scope refuses a request of a scoped session outside its namespaces: in
// another namespace, across all namespaces, or a write of a cluster-scoped
// resource. Reads of cluster-scoped resources and the reviews that tell the
// session who it is and what it may do pass: the target's RBAC decides.
func (c *accessCheck) scope() error {
	info := c.info
	what := "request of " + resourceName(info)
	switch {
	case info.Verb == "":
	case strings.ContainsAny(info.Verb[:1], "aeiou"):
		what = "n " + info.Verb + " of " + resourceName(info)
	default:
		what = " " + info.Verb + " of " + resourceName(info)
	}
	if info.Name != "" {
		what += " " + info.Name
	}
	switch {
	case selfReview(info):
		return nil
	case info.APIGroup == "" && info.Resource == "namespaces":
		// A Namespace object is cluster-scoped, though its RequestInfo
		// puts it in itself.
		if readVerbs.Has(info.Verb) {
			return nil
		}
		return c.outOfScope(what + ": a scoped session does not write cluster-scoped resources, Namespaces included")
	case info.Namespace != "":
		if slices.Contains(c.target.Scope, info.Namespace) {
			return nil
		}
		return c.outOfScope(what + " in namespace " + info.Namespace)
	case info.Subresource == "proxy" || info.Verb == "proxy":
		return c.outOfScope(what + ": the proxy of a cluster-scoped resource reaches beyond its namespaces, a node's the pods of every namespace")
	case !readVerbs.Has(info.Verb):
		return c.outOfScope(what + ": a scoped session does not write cluster-scoped resources")
	}
	all, listed, err := c.allNamespaces()
	switch {
	case err != nil:
		return err
	case !listed:
		return c.outOfScope(what + ": the target's discovery does not list the resource, which may be namespaced")
	case all:
		return c.outOfScope(what + " across all namespaces")
	}
	return nil
}

// outOfScope is the 403 of a request outside the session's scope; what
// says which, after its article: "n update of namespaces shop".
func (c *accessCheck) outOfScope(what string) error {
	t := c.target
	return &accessRefusal{apierrors.NewForbidden(sessionProxy, t.Name, fmt.Errorf("session %s/%s is scoped to namespaces %s: clustergate refuses a%s",
		t.Namespace, t.Name, strings.Join(t.Scope, ", "), what)), reasonScope}
}

// selfReview tells the reviews a client creates to learn who it is and
// what it may do (kubectl auth whoami and auth can-i): cluster-scoped
// creates that write nothing.
func selfReview(info *request.RequestInfo) bool {
	if info.Verb != "create" || info.Subresource != "" {
		return false
	}
	switch info.APIGroup {
	case "authentication.k8s.io":
		return info.Resource == "selfsubjectreviews"
	case "authorization.k8s.io":
		return info.Resource == "selfsubjectaccessreviews" || info.Resource == "selfsubjectrulesreviews"
	}
	return false
}

// resourceName names a request's resource as kubectl does, with its group
// and subresource: pods, deployments.apps, pods/exec.
func resourceName(info *request.RequestInfo) string {
	name := info.Resource
	if info.APIGroup != "" {
		name += "." + info.APIGroup
	}
	if info.Subresource != "" {
		name += "/" + info.Subresource
	}
	return name
}
