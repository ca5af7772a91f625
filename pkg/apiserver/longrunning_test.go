// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestLongRunning(t *testing.T) {
	factory := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	const proxy = "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix/proxy"
	const recordings = "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix/recordings"
	tests := []struct {
		method, path string
		upgrade      bool
		want         bool
	}{
		{"GET", proxy + "/api/v1/namespaces", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/configmaps?watch=true", false, true},
		{"GET", proxy + "/api/v1/watch/namespaces/default/configmaps", false, true},
		{"POST", proxy + "/api/v1/namespaces/default/pods/p/exec?command=sh", false, true},
		{"POST", proxy + "/api/v1/namespaces/default/pods/p/portforward", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=true", false, true},
		// Every spelling the target's kube-apiserver follows.
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=1", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=TRUE", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=True", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=yes", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=TRUE&follow=false", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=false", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=FALSE", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?follow=0", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log?tailLines=10", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/pods/p/log", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/configmaps?watch=1", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/configmaps?watch=TRUE", false, true},
		{"GET", proxy + "/api/v1/namespaces/default/configmaps?watch=false", false, false},
		{"GET", proxy + "/apis/apps/v1/deployments", false, false},
		{"GET", proxy + "/api/v1/namespaces/default/configmaps", true, true},
		// An Upgrade header without "Connection: upgrade" asks for no upgrade.
		{"GET", proxy + "/api/v1/namespaces/default/configmaps", false, false},
		// A follow of a recording runs as long as the stream; a read ends.
		{"GET", recordings + "/streams/s1?follow=true", false, true},
		{"GET", recordings + "/requests?follow=true", false, true},
		{"GET", recordings + "/streams/s1", false, false},
		{"GET", recordings + "/requests?follow=false", false, false},
		{"GET", recordings, false, false},
		{"GET", "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions?watch=true", false, true},
		{"GET", "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			r.Header.Set("Upgrade", "websocket")
			if tt.upgrade {
				r.Header.Set("Connection", "Upgrade")
			}
			info, err := factory.NewRequestInfo(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := LongRunning(r, info); got != tt.want {
				t.Errorf("LongRunning = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFollowIsAuthorizedAsARead: a follow of a recording is the same GET
// as a read, authorized as get on sessions/recordings (the auditors'),
// not as a watch or a verb of its own.
func TestFollowIsAuthorizedAsARead(t *testing.T) {
	factory := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	const recordings = "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix/recordings"
	for _, path := range []string{
		recordings + "/streams/s1", recordings + "/streams/s1?follow=true",
		recordings + "/requests", recordings + "/requests?follow=true",
	} {
		t.Run(path, func(t *testing.T) {
			info, err := factory.NewRequestInfo(httptest.NewRequest("GET", path, nil))
			if err != nil {
				t.Fatal(err)
			}
			if info.Verb != "get" || info.Resource != "sessions" || info.Subresource != "recordings" || info.Name != "fix" || info.Namespace != "sre" {
				t.Errorf("authorized as %s %s/%s %s/%s", info.Verb, info.Resource, info.Subresource, info.Namespace, info.Name)
			}
		})
	}
}
