// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"net/http/httptest"
	"testing"
)

// TestMayStream: watches, followed logs and upgrades keep the stack they
// grow into; everything a proxied kubectl get sends is grown at once.
func TestMayStream(t *testing.T) {
	tests := []struct {
		target  string
		upgrade string
		want    bool
	}{
		{target: "/sessions/sre/fix/api/v1/namespaces/default"},
		{target: "/sessions/sre/fix/api/v1/pods?limit=500"},
		{target: "/sessions/sre/fix/apis/apps/v1/namespaces/x/deployments/d"},
		{target: "/sessions/sre/fix/api/v1/pods?watch=true&resourceVersion=1", want: true},
		{target: "/sessions/sre/fix/api/v1/pods?allowWatchBookmarks=true&watch=1", want: true},
		{target: "/sessions/sre/fix/api/v1/watch/pods", want: true},
		{target: "/sessions/sre/fix/api/v1/namespaces/x/pods/p/log?follow=true", want: true},
		{target: "/sessions/sre/fix/api/v1/namespaces/x/pods/p/exec?command=sh", upgrade: "websocket", want: true},
		{target: "/sessions/sre/fix/api/v1/namespaces/x/pods/p/portforward", upgrade: "SPDY/3.1", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.target, nil)
			if tt.upgrade != "" {
				req.Header.Set("Upgrade", tt.upgrade)
			}
			if got := mayStream(req); got != tt.want {
				t.Errorf("mayStream = %v, want %v", got, tt.want)
			}
		})
	}
}
