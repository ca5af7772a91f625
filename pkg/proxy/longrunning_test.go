// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http/httptest"
	"testing"
)

// TestPlainRequest: a request told plain at once is never one that its
// RequestInfo makes long-running, whatever its path and query.
func TestPlainRequest(t *testing.T) {
	paths := []string{
		"/", "/api", "/apis", "/api/v1", "/api/v1/pods", "/api/v1/namespaces/a/pods", "/api/v1/namespaces/a/pods/p",
		"/api/v1/watch/pods", "/api/v1/watch/namespaces/a/pods/p", "/apis/apps/v1/watch/deployments",
		"/api/v1/namespaces/a/pods/p/log", "/api/v1/namespaces/a/pods/p/exec", "/api/v1/namespaces/a/pods/p/attach",
		"/api/v1/namespaces/a/pods/p/portforward", "/api/v1/namespaces/a/pods/p/proxy/metrics", "/api/v1/namespaces/a/services/s/proxy/",
		"/api/v1/nodes/n/proxy/stats", "/api/v1/namespaces/a/pods/p/status", "/apis/apps/v1/namespaces/a/deployments/d/scale",
		"/api/v1/namespaces/watch/pods", "/api/v1/namespaces/a/pods/log", "/metrics", "/healthz", "/openapi/v3",
	}
	queries := []string{
		"", "limit=500", "watch=true", "watch=1", "watch=false", "watch", "follow=true", "follow=1&container=c",
		"allowWatchBookmarks=true&watch=true", "wat%63h=true", "fol%6cow=true", "labelSelector=app%3Dx", "fieldSelector=x&timeout=32s",
	}
	for _, path := range paths {
		for _, query := range queries {
			req := httptest.NewRequest("GET", "/proxy"+path+"?"+query, nil)
			if longRunning, _ := classifyByInfo(&targetRequest{req: req, path: path}); longRunning && plainRequest(req.URL.RawQuery, path) {
				t.Errorf("%s?%s is long-running, but told plain", path, query)
			}
		}
	}
}
