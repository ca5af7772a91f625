// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package istioauthz proves that clustergate's Istio layout guards the data
// plane without touching the server's own ports: its test builds the Envoy
// RBAC filters istiod builds from the shipped component
// (artifacts/components/data-plane) and the policies the server writes per
// session, and evaluates them over requests and connections.
//
// This file is the evaluator: Envoy's RBAC semantics for the matcher kinds
// istiod generates from these policies. It reports any other kind as an
// error, so that a configuration it cannot judge fails the test instead of
// passing it.
package istioauthz

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"istio.io/istio/pkg/wellknown"
)

// request is what an RBAC filter sees of an HTTP request or, for a network
// filter, of a TCP connection.
type request struct {
	// port is the destination port: the proxy's listening port.
	port uint32
	// path is the :path header, query included, as Envoy passes it to the
	// filters; HTTP only.
	path string
	// metadata is the dynamic metadata by filter name, where
	// the JWT filter puts a verified token's claims.
	metadata map[string]*structpb.Struct
}

// verdict is what a chain of RBAC filters does with a request.
type verdict struct {
	denied bool
	// by names the filter and policy that denied, or why none did.
	by string
}

// evalHTTP runs the HTTP RBAC filters istiod put on an HTTP filter chain.
func evalHTTP(filters []*hcm.HttpFilter, r request) (verdict, error) {
	var rules []*rbacpb.RBAC
	for _, f := range filters {
		if f.GetName() != wellknown.HTTPRoleBasedAccessControl {
			return verdict{}, fmt.Errorf("HTTP filter %s is not implemented", f.GetName())
		}
		cfg := &rbachttp.RBAC{}
		if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
			return verdict{}, fmt.Errorf("HTTP filter %s: %w", f.GetName(), err)
		}
		if cfg.GetMatcher() != nil || cfg.GetShadowMatcher() != nil {
			return verdict{}, fmt.Errorf("HTTP filter %s: the unified matcher API is not implemented", f.GetName())
		}
		rules = append(rules, cfg.GetRules())
	}
	return evalChain(rules, r, true)
}

// evalTCP runs the network RBAC filters istiod put on a TCP filter chain,
// as on a connection's first bytes: a network filter sees no HTTP.
func evalTCP(filters []*listener.Filter, r request) (verdict, error) {
	var rules []*rbacpb.RBAC
	for _, f := range filters {
		if f.GetName() != wellknown.RoleBasedAccessControl {
			return verdict{}, fmt.Errorf("network filter %s is not implemented", f.GetName())
		}
		cfg := &rbactcp.RBAC{}
		if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
			return verdict{}, fmt.Errorf("network filter %s: %w", f.GetName(), err)
		}
		if cfg.GetMatcher() != nil || cfg.GetShadowMatcher() != nil {
			return verdict{}, fmt.Errorf("network filter %s: the unified matcher API is not implemented", f.GetName())
		}
		rules = append(rules, cfg.GetRules())
	}
	return evalChain(rules, r, false)
}

// evalChain applies the filters' enforced rules in order, as Envoy does:
// the first filter that denies ends the request. Shadow rules (dry run)
// never deny, so they are not evaluated; nil rules enforce nothing.
func evalChain(chain []*rbacpb.RBAC, r request, http bool) (verdict, error) {
	for i, rules := range chain {
		if rules == nil {
			continue
		}
		matched, err := matchPolicies(rules.GetPolicies(), r, http)
		if err != nil {
			return verdict{}, fmt.Errorf("filter %d: %w", i, err)
		}
		switch rules.GetAction() {
		case rbacpb.RBAC_DENY:
			if matched != "" {
				return verdict{denied: true, by: fmt.Sprintf("filter %d DENY %s", i, matched)}, nil
			}
		case rbacpb.RBAC_ALLOW:
			if matched == "" {
				return verdict{denied: true, by: fmt.Sprintf("filter %d ALLOW: no policy matched", i)}, nil
			}
		case rbacpb.RBAC_LOG:
		default:
			return verdict{}, fmt.Errorf("filter %d: action %s is not implemented", i, rules.GetAction())
		}
	}
	if len(chain) == 0 {
		return verdict{by: "no RBAC filter"}, nil
	}
	return verdict{by: "no filter denied"}, nil
}

// matchPolicies returns the name of the first policy, in Envoy's order
// (by name), that matches the request, or "". Every policy is evaluated, so
// that a matcher kind the evaluator lacks is an error wherever it is.
func matchPolicies(policies map[string]*rbacpb.Policy, r request, http bool) (string, error) {
	names := make([]string, 0, len(policies))
	for name := range policies {
		names = append(names, name)
	}
	slices.Sort(names)
	first := ""
	for _, name := range names {
		p := policies[name]
		if p.GetCondition() != nil || p.GetCheckedCondition() != nil {
			return "", fmt.Errorf("policy %s: CEL conditions are not implemented", name)
		}
		perm, err := some(p.GetPermissions(), func(x *rbacpb.Permission) (bool, error) { return matchPermission(x, r, http) })
		if err != nil {
			return "", fmt.Errorf("policy %s: %w", name, err)
		}
		prin, err := some(p.GetPrincipals(), func(x *rbacpb.Principal) (bool, error) { return matchPrincipal(x, r) })
		if err != nil {
			return "", fmt.Errorf("policy %s: %w", name, err)
		}
		if perm && prin && first == "" {
			first = name
		}
	}
	return first, nil
}

// matchPermission evaluates a permission: what the request asks for.
func matchPermission(p *rbacpb.Permission, r request, http bool) (bool, error) {
	match := func(x *rbacpb.Permission) (bool, error) { return matchPermission(x, r, http) }
	switch rule := p.GetRule().(type) {
	case *rbacpb.Permission_AndRules:
		return every(rule.AndRules.GetRules(), match)
	case *rbacpb.Permission_OrRules:
		return some(rule.OrRules.GetRules(), match)
	case *rbacpb.Permission_NotRule:
		m, err := match(rule.NotRule)
		return !m, err
	case *rbacpb.Permission_Any:
		return rule.Any, nil
	case *rbacpb.Permission_DestinationPort:
		return r.port == rule.DestinationPort, nil
	case *rbacpb.Permission_UrlPath:
		if !http {
			// Istio drops HTTP conditions from TCP filters; one showing up
			// there is a configuration this evaluator has no model of.
			return false, fmt.Errorf("url_path in a network filter")
		}
		return matchPath(rule.UrlPath, r.path)
	default:
		return false, fmt.Errorf("permission %T is not implemented", rule)
	}
}

// matchPrincipal evaluates a principal: who asks.
func matchPrincipal(p *rbacpb.Principal, r request) (bool, error) {
	match := func(x *rbacpb.Principal) (bool, error) { return matchPrincipal(x, r) }
	switch id := p.GetIdentifier().(type) {
	case *rbacpb.Principal_AndIds:
		return every(id.AndIds.GetIds(), match)
	case *rbacpb.Principal_OrIds:
		return some(id.OrIds.GetIds(), match)
	case *rbacpb.Principal_NotId:
		m, err := match(id.NotId)
		return !m, err
	case *rbacpb.Principal_Any:
		return id.Any, nil
	case *rbacpb.Principal_Metadata:
		return matchMetadata(id.Metadata, r.metadata)
	default:
		return false, fmt.Errorf("principal %T is not implemented", id)
	}
}

// matchPath matches the path without its query and fragment, as Envoy's
// url_path does.
func matchPath(m *matcherpb.PathMatcher, path string) (bool, error) {
	sm := m.GetPath()
	if sm == nil {
		return false, fmt.Errorf("path matcher %T is not implemented", m.GetRule())
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	return matchString(sm, path)
}

// matchMetadata looks the matcher's path up in the filter's metadata as
// Envoy does (a missing key or a non-struct on the way is an unset value,
// which no string or list matcher matches) and applies invert.
func matchMetadata(m *matcherpb.MetadataMatcher, metadata map[string]*structpb.Struct) (bool, error) {
	value := &structpb.Value{}
	current := metadata[m.GetFilter()]
	for _, seg := range m.GetPath() {
		if _, ok := seg.GetSegment().(*matcherpb.MetadataMatcher_PathSegment_Key); !ok {
			return false, fmt.Errorf("metadata path segment %T is not implemented", seg.GetSegment())
		}
		field, ok := current.GetFields()[seg.GetKey()]
		if !ok {
			value = &structpb.Value{}
			break
		}
		value, current = field, field.GetStructValue()
	}
	matched, err := matchValue(m.GetValue(), value)
	return matched != m.GetInvert(), err
}

// matchValue evaluates a value matcher. A matcher of the wrong kind for the
// value does not match, but its parts are still checked for kinds the
// evaluator lacks.
func matchValue(m *matcherpb.ValueMatcher, v *structpb.Value) (bool, error) {
	switch p := m.GetMatchPattern().(type) {
	case *matcherpb.ValueMatcher_StringMatch:
		_, isString := v.GetKind().(*structpb.Value_StringValue)
		ok, err := matchString(p.StringMatch, v.GetStringValue())
		return isString && ok, err
	case *matcherpb.ValueMatcher_ListMatch:
		oneOf := p.ListMatch.GetOneOf()
		if oneOf == nil {
			return false, fmt.Errorf("list matcher %T is not implemented", p.ListMatch.GetMatchPattern())
		}
		list := v.GetListValue()
		if list == nil {
			_, err := matchValue(oneOf, &structpb.Value{})
			return false, err
		}
		return some(list.GetValues(), func(x *structpb.Value) (bool, error) { return matchValue(oneOf, x) })
	case *matcherpb.ValueMatcher_OrMatch:
		return some(p.OrMatch.GetValueMatchers(), func(x *matcherpb.ValueMatcher) (bool, error) { return matchValue(x, v) })
	default:
		return false, fmt.Errorf("value matcher %T is not implemented", p)
	}
}

// matchString evaluates a string matcher; safe_regex must match the whole
// string, as RE2's FullMatch in Envoy.
func matchString(m *matcherpb.StringMatcher, s string) (bool, error) {
	fold := func(x string) string {
		if m.GetIgnoreCase() {
			return strings.ToLower(x)
		}
		return x
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcherpb.StringMatcher_Exact:
		return fold(s) == fold(p.Exact), nil
	case *matcherpb.StringMatcher_Prefix:
		return strings.HasPrefix(fold(s), fold(p.Prefix)), nil
	case *matcherpb.StringMatcher_Suffix:
		return strings.HasSuffix(fold(s), fold(p.Suffix)), nil
	case *matcherpb.StringMatcher_Contains:
		return strings.Contains(fold(s), fold(p.Contains)), nil
	case *matcherpb.StringMatcher_SafeRegex:
		if m.GetIgnoreCase() {
			return false, fmt.Errorf("ignore_case on safe_regex: Envoy rejects it")
		}
		re, err := regexp.Compile(`^(?:` + p.SafeRegex.GetRegex() + `)$`)
		if err != nil {
			return false, err
		}
		return re.MatchString(s), nil
	default:
		return false, fmt.Errorf("string matcher %T is not implemented", p)
	}
}

// every is an AND over all of xs: all are evaluated, so that an unknown
// matcher kind anywhere is an error. An empty AND matches, as in Envoy.
func every[T any](xs []T, match func(T) (bool, error)) (bool, error) {
	all := true
	for _, x := range xs {
		m, err := match(x)
		if err != nil {
			return false, err
		}
		all = all && m
	}
	return all, nil
}

// some is an OR over all of xs, evaluating each like every. An empty OR
// does not match, as in Envoy.
func some[T any](xs []T, match func(T) (bool, error)) (bool, error) {
	anyOf := false
	for _, x := range xs {
		m, err := match(x)
		if err != nil {
			return false, err
		}
		anyOf = anyOf || m
	}
	return anyOf, nil
}
