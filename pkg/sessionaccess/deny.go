// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionaccess

import (
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// Request is a request of a session, as the deny rules see it.
type Request struct {
	// Info is the request as k8s.io/apiserver parses it.
	Info *request.RequestInfo
	// AllNamespaces says that the request, without a namespace, is for a
	// namespaced resource and so reaches every namespace, as kubectl get
	// secrets -A does.
	AllNamespaces bool
	// Level is the session's access level.
	Level string
	// Target is the session's target: shoot/<name> or cluster/<name>.
	Target string
}

// Denied returns the first deny rule that refuses the request, or nil.
func (c *Configuration) Denied(req Request) *DenyRule {
	if req.Info == nil || !req.Info.IsResourceRequest {
		return nil
	}
	for i := range c.DenyRules {
		if r := &c.DenyRules[i]; r.matches(req) {
			return r
		}
	}
	return nil
}

func (r *DenyRule) matches(req Request) bool {
	info := req.Info
	return has(r.Levels, req.Level) && has(r.Targets, req.Target) &&
		has(r.Verbs, info.Verb) && has(r.APIGroups, info.APIGroup) &&
		r.matchesResource(info.Resource, info.Subresource) &&
		r.matchesNamespace(req) && has(r.Names, info.Name)
}

// matchesResource matches resources the way RBAC does: "pods" is the main
// resource only, "pods/exec" one subresource, "pods/*" every subresource
// and "*" or "*/exec" across resources.
func (r *DenyRule) matchesResource(resource, subresource string) bool {
	if len(r.Resources) == 0 {
		return true
	}
	for _, want := range r.Resources {
		res, sub, hasSub := strings.Cut(want, "/")
		switch {
		case res == "*" && !hasSub:
			return true
		case res != "*" && res != resource:
			continue
		case !hasSub && subresource == "":
			return true
		case hasSub && (sub == "*" && subresource != "" || sub == subresource):
			return true
		}
	}
	return false
}

// matchesNamespace holds a request across all namespaces to every rule
// that names one, since it reaches them all, and treats a Namespace object
// as lying in itself: request info gives /api/v1/namespaces/x namespace x
// already, so a rule for kube-system also holds the Namespace kube-system.
func (r *DenyRule) matchesNamespace(req Request) bool {
	switch ns := req.Info.Namespace; {
	case len(r.Namespaces) == 0:
		return true
	case ns == "":
		return req.AllNamespaces
	default:
		return has(r.Namespaces, ns)
	}
}

// has reports whether a rule's list admits a value: empty or "*" admits all.
func has(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, v) || slices.Contains(list, "*")
}
