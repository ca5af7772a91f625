// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestModerationFor: what a session that requires a moderator does with
// each kind of request, whichever way it came in.
func TestModerationFor(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods/"
	tests := []struct {
		name      string
		method    string
		path      string
		upgrade   string
		recording bool
		await     bool
		refused   string // a part of the refusal; empty is none
	}{
		{name: "exec over WebSocket waits", method: http.MethodGet, path: pods + "p/exec?command=sh&stdin=true&tty=true", upgrade: "websocket", recording: true, await: true},
		{name: "exec over SPDY waits", method: http.MethodPost, path: pods + "p/exec?command=sh", upgrade: "SPDY/3.1", recording: true, await: true},
		{name: "attach waits (kubectl debug attaches too)", method: http.MethodPost, path: pods + "p/attach?container=debugger", upgrade: "SPDY/3.1", recording: true, await: true},
		{name: "the kubelet's exec through the node's proxy waits", method: http.MethodPost, path: "/api/v1/nodes/n/proxy/exec/default/p/c?command=sh", upgrade: "SPDY/3.1", recording: true, await: true},
		{name: "exec without recording is refused", method: http.MethodGet, path: pods + "p/exec?command=sh", upgrade: "websocket", refused: "records nothing"},
		{name: "port-forward is refused", method: http.MethodPost, path: pods + "p/portforward?ports=80", upgrade: "SPDY/3.1", recording: true, refused: "pods/p/portforward cannot be followed by a moderator"},
		{name: "an ephemeral container is refused", method: http.MethodPatch, path: pods + "p/ephemeralcontainers", recording: true, refused: "ephemeralcontainers cannot be followed by a moderator"},
		{name: "a pod's proxy upgraded is refused", method: http.MethodGet, path: pods + "p/proxy/ws", upgrade: "websocket", recording: true, refused: "cannot be followed by a moderator"},
		{name: "a write through the kubelet's proxy is refused", method: http.MethodPost, path: "/api/v1/nodes/n/proxy/run/default/p/c", recording: true, refused: "nodes/n/proxy/run"},
		{name: "creating a pod is refused (kubectl debug node/NAME, kubectl run)", method: http.MethodPost, path: "/api/v1/namespaces/default/pods", recording: true, refused: "creating pods cannot be followed"},
		{name: "changing a pod's image is refused", method: http.MethodPatch, path: pods + "p", recording: true, refused: "patching pods"},
		{name: "creating a Job is refused", method: http.MethodPost, path: "/apis/batch/v1/namespaces/default/jobs", recording: true, refused: "creating jobs"},
		{name: "changing a Deployment's template is refused", method: http.MethodPut, path: "/apis/apps/v1/namespaces/default/deployments/d", recording: true, refused: "updating deployments"},
		{name: "scaling a Deployment passes", method: http.MethodPatch, path: "/apis/apps/v1/namespaces/default/deployments/d/scale", recording: true},
		{name: "deleting a pod passes", method: http.MethodDelete, path: pods + "p", recording: true},
		{name: "creating a ConfigMap passes", method: http.MethodPost, path: "/api/v1/namespaces/default/configmaps", recording: true},
		{name: "server-side apply of a DaemonSet is refused", method: http.MethodPatch, path: "/apis/apps/v1/namespaces/default/daemonsets/d?fieldManager=kubectl", recording: true, refused: "patching daemonsets"},
		{name: "creating a CronJob is refused", method: http.MethodPost, path: "/apis/batch/v1/namespaces/default/cronjobs", recording: true, refused: "creating cronjobs"},
		{name: "a Pod's status passes", method: http.MethodPatch, path: pods + "p/status", recording: true},
		{name: "deleting pods passes", method: http.MethodDelete, path: "/api/v1/namespaces/default/pods", recording: true},
		{name: "reading ephemeral containers passes", method: http.MethodGet, path: pods + "p/ephemeralcontainers", recording: true},
		{name: "a list passes", method: http.MethodGet, path: "/api/v1/pods", recording: true},
		{name: "logs followed pass", method: http.MethodGet, path: pods + "p/log?follow=true", upgrade: "websocket", recording: true},
		{name: "a watch passes", method: http.MethodGet, path: "/api/v1/pods?watch=true", upgrade: "websocket", recording: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/proxy"+tt.path, nil)
			if tt.upgrade != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tt.upgrade)
			}
			path, _, _ := strings.Cut(tt.path, "?")
			// What a moderated session's request is inspected for, as the
			// handler asks it: a plain write is read too, not only upgrades.
			seen, err := (&Tracker{}).inspectFor(&targetRequest{req: req, path: path}, true)
			must(t, err)
			await, err := moderationFor(seen, tt.recording)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || !errors.Is(err, errUnmoderatable)):
				t.Fatalf("moderationFor: %v, want a refusal with %q", err, tt.refused)
			}
			if await != tt.await {
				t.Errorf("await = %v, want %v", await, tt.await)
			}
		})
	}
}

// TestChannelProtocol: the relay answers in the newest channel protocol
// the client offers, and leaves any other upgrade alone.
func TestChannelProtocol(t *testing.T) {
	tests := []struct {
		name, upgrade, key string
		offered            []string
		want               string
	}{
		{name: "kubectl", upgrade: "websocket", key: "k", offered: []string{"v5.channel.k8s.io, v4.channel.k8s.io"}, want: "v5.channel.k8s.io"},
		{name: "older client", upgrade: "websocket", key: "k", offered: []string{"v4.channel.k8s.io", "base64.channel.k8s.io"}, want: "v4.channel.k8s.io"},
		{name: "base64 only", upgrade: "websocket", key: "k", offered: []string{"base64.channel.k8s.io"}},
		{name: "SPDY", upgrade: "SPDY/3.1", key: "k", offered: []string{"v4.channel.k8s.io"}},
		{name: "no key", upgrade: "websocket", offered: []string{"v5.channel.k8s.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Upgrade", tt.upgrade)
			if tt.key != "" {
				req.Header.Set("Sec-Websocket-Key", tt.key)
			}
			for _, p := range tt.offered {
				req.Header.Add("Sec-Websocket-Protocol", p)
			}
			if got := channelProtocol(req); got != tt.want {
				t.Errorf("channelProtocol = %q, want %q", got, tt.want)
			}
		})
	}
}
