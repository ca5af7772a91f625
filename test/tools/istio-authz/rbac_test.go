// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package istioauthz

import (
	"strings"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestEvaluator: the evaluator's Envoy semantics on hand-made rules, and
// an error, never a match, for what it does not implement.
func TestEvaluator(t *testing.T) {
	anyPrincipal := &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}
	anyPermission := &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}
	path := func(m *matcherpb.StringMatcher) *rbacpb.Permission {
		return &rbacpb.Permission{Rule: &rbacpb.Permission_UrlPath{UrlPath: &matcherpb.PathMatcher{Rule: &matcherpb.PathMatcher_Path{Path: m}}}}
	}
	claim := func(name string, m *matcherpb.StringMatcher, invert bool) *rbacpb.Principal {
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_Metadata{Metadata: &matcherpb.MetadataMatcher{
			Filter: "jwt",
			Path: []*matcherpb.MetadataMatcher_PathSegment{
				{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: "payload"}},
				{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: name}},
			},
			Value:  &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: m}},
			Invert: invert,
		}}}
	}
	exact := func(s string) *matcherpb.StringMatcher {
		return &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: s}}
	}
	regex := func(s string) *matcherpb.StringMatcher {
		return &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: s}}}
	}
	payload, err := structpb.NewStruct(map[string]any{"payload": map[string]any{"sub": "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	alice := map[string]*structpb.Struct{"jwt": payload}

	tests := []struct {
		name       string
		action     rbacpb.RBAC_Action
		permission *rbacpb.Permission
		principal  *rbacpb.Principal
		r          request
		wantDenied bool
		wantErr    string
	}{
		{name: "DENY matching", action: rbacpb.RBAC_DENY, permission: anyPermission, principal: anyPrincipal, wantDenied: true},
		{name: "ALLOW matching", action: rbacpb.RBAC_ALLOW, permission: anyPermission, principal: anyPrincipal},
		{name: "ALLOW not matching", action: rbacpb.RBAC_ALLOW, permission: path(exact("/a")), principal: anyPrincipal, r: request{path: "/b"}, wantDenied: true},
		{name: "LOG never denies", action: rbacpb.RBAC_LOG, permission: anyPermission, principal: anyPrincipal},
		{name: "url_path ignores the query", action: rbacpb.RBAC_DENY, permission: path(exact("/a")), principal: anyPrincipal, r: request{path: "/a?b=/c"}, wantDenied: true},
		{name: "safe_regex matches the whole string", action: rbacpb.RBAC_DENY, permission: path(regex("/a")), principal: anyPrincipal, r: request{path: "/a/b"}},
		{name: "a claim", action: rbacpb.RBAC_DENY, permission: anyPermission, principal: claim("sub", exact("alice"), false), r: request{metadata: alice}, wantDenied: true},
		{name: "a missing claim does not match", action: rbacpb.RBAC_DENY, permission: anyPermission, principal: claim("iss", regex(".*"), false), r: request{metadata: alice}},
		{name: "invert", action: rbacpb.RBAC_DENY, permission: anyPermission, principal: claim("sub", exact("alice"), true), r: request{metadata: alice}},
		{name: "no metadata", action: rbacpb.RBAC_DENY, permission: anyPermission, principal: claim("sub", exact("alice"), true), wantDenied: true},
		{
			name:   "an unimplemented permission",
			action: rbacpb.RBAC_DENY,
			permission: &rbacpb.Permission{Rule: &rbacpb.Permission_OrRules{OrRules: &rbacpb.Permission_Set{Rules: []*rbacpb.Permission{
				anyPermission,
				{Rule: &rbacpb.Permission_DestinationIp{DestinationIp: &corepb.CidrRange{AddressPrefix: "10.0.0.0"}}},
			}}}},
			principal: anyPrincipal,
			wantErr:   "Permission_DestinationIp is not implemented",
		},
		{
			name:       "an unimplemented principal",
			action:     rbacpb.RBAC_DENY,
			permission: anyPermission,
			principal:  &rbacpb.Principal{Identifier: &rbacpb.Principal_Authenticated_{Authenticated: &rbacpb.Principal_Authenticated{}}},
			wantErr:    "Principal_Authenticated_ is not implemented",
		},
		{
			name:       "an unimplemented string matcher",
			action:     rbacpb.RBAC_DENY,
			permission: path(&matcherpb.StringMatcher{}),
			principal:  anyPrincipal,
			wantErr:    "string matcher <nil> is not implemented",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := &rbacpb.RBAC{Action: tt.action, Policies: map[string]*rbacpb.Policy{
				"p": {Permissions: []*rbacpb.Permission{tt.permission}, Principals: []*rbacpb.Principal{tt.principal}},
			}}
			v, err := evalChain([]*rbacpb.RBAC{rules}, tt.r, true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want the error %q", v, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.denied != tt.wantDenied {
				t.Errorf("denied %t (%s), want %t", v.denied, v.by, tt.wantDenied)
			}
		})
	}
}

// TestEvaluatorTCP: a network filter has no HTTP path to match.
func TestEvaluatorTCP(t *testing.T) {
	rules := &rbacpb.RBAC{Action: rbacpb.RBAC_DENY, Policies: map[string]*rbacpb.Policy{"p": {
		Permissions: []*rbacpb.Permission{{Rule: &rbacpb.Permission_UrlPath{UrlPath: &matcherpb.PathMatcher{}}}},
		Principals:  []*rbacpb.Principal{{Identifier: &rbacpb.Principal_Any{Any: true}}},
	}}}
	if _, err := evalChain([]*rbacpb.RBAC{rules}, request{port: 8443}, false); err == nil {
		t.Error("url_path in a network filter evaluated without an error")
	}
}
