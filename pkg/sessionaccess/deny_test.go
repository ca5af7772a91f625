// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionaccess

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// TestDenied runs the shipped example's rules on requests as kubectl sends
// them, parsed by k8s.io/apiserver as the proxy parses them.
func TestDenied(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "artifacts", "examples", "session-access.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.DenyRules = append(c.DenyRules, DenyRule{Name: "viewers-no-nodes-of-prod", Resources: []string{"nodes", "*/proxy"},
		Levels: []string{"viewer"}, Targets: []string{"shoot/prod"}})
	parser := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	tests := []struct {
		name          string
		method, path  string
		allNamespaces bool
		level         string
		want          string // the rule's name; empty is none
	}{
		{name: "secret in kube-system", method: "GET", path: "/api/v1/namespaces/kube-system/secrets/token", want: "no-secrets-in-kube-system"},
		{name: "secrets of kube-system listed", method: "GET", path: "/api/v1/namespaces/kube-system/secrets", want: "no-secrets-in-kube-system"},
		{name: "secrets of all namespaces", method: "GET", path: "/api/v1/secrets", allNamespaces: true, want: "no-secrets-in-kube-system"},
		{name: "secret written in kube-system", method: "PUT", path: "/api/v1/namespaces/kube-system/secrets/token"},
		{name: "secret in shop", method: "GET", path: "/api/v1/namespaces/shop/secrets/db"},
		{name: "exec over SPDY in kube-system", method: "POST", path: "/api/v1/namespaces/kube-system/pods/etcd-0/exec", want: "no-exec-in-kube-system"},
		{name: "exec over WebSocket in kube-system", method: "GET", path: "/api/v1/namespaces/kube-system/pods/etcd-0/exec", want: "no-exec-in-kube-system"},
		{name: "attach in kube-system", method: "POST", path: "/api/v1/namespaces/kube-system/pods/etcd-0/attach", want: "no-exec-in-kube-system"},
		{name: "debug container in kube-system", method: "PATCH", path: "/api/v1/namespaces/kube-system/pods/etcd-0/ephemeralcontainers", want: "no-exec-in-kube-system"},
		{name: "pod logs in kube-system", method: "GET", path: "/api/v1/namespaces/kube-system/pods/etcd-0/log"},
		{name: "exec in shop", method: "POST", path: "/api/v1/namespaces/shop/pods/web-0/exec"},
		{name: "namespace deleted", method: "DELETE", path: "/api/v1/namespaces/shop", want: "no-namespace-delete"},
		{name: "namespaces deleted at once", method: "DELETE", path: "/api/v1/namespaces", want: "no-namespace-delete"},
		{name: "namespace read", method: "GET", path: "/api/v1/namespaces/shop"},
		{name: "namespace finalized", method: "PUT", path: "/api/v1/namespaces/shop/finalize"},
		{name: "discovery", method: "GET", path: "/api"},
		{name: "a rule for one level and target", method: "GET", path: "/api/v1/nodes", level: "viewer", want: "viewers-no-nodes-of-prod"},
		{name: "a rule's subresource pattern", method: "GET", path: "/api/v1/nodes/n1/proxy/metrics", level: "viewer", want: "viewers-no-nodes-of-prod"},
		{name: "a rule for another level", method: "GET", path: "/api/v1/nodes", level: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := parser.NewRequestInfo(httptest.NewRequest(tt.method, tt.path, nil))
			if err != nil {
				t.Fatal(err)
			}
			level := tt.level
			if level == "" {
				level = "admin"
			}
			got := ""
			if r := c.Denied(Request{Info: info, AllNamespaces: tt.allNamespaces, Level: level, Target: "shoot/prod"}); r != nil {
				got = r.Name
			}
			if got != tt.want {
				t.Errorf("%s %s denied by %q, want %q", tt.method, tt.path, got, tt.want)
			}
		})
	}
}
