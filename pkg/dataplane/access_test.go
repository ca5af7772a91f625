// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// TestAccessRefusals: the data plane holds a scoped session to its
// namespaces and every session to the deny rules as sessions/proxy does:
// a 403 Status before anything reaches the target, an exec refused before
// its upgrade, and kubectl auth whoami passes.
func TestAccessRefusals(t *testing.T) {
	auth := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	var reached atomic.Int64
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The proxy's own discovery, which names itself.
		if r.URL.Path == "/api/v1" && strings.HasPrefix(r.UserAgent(), "clustergate ") {
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true}}})
			return
		}
		reached.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	defer back.Close()
	backURL, _ := url.Parse(back.URL)
	tracker := proxy.NewTracker(clock.RealClock{}, proxy.Limits{})
	tracker.EnforceAccess(&sessionaccess.Configuration{DenyRules: []sessionaccess.DenyRule{{
		Name: "no-exec-in-shop-db", Message: "the database is not debugged live", Verbs: []string{"*"}, Resources: []string{"pods/exec"}, Namespaces: []string{"shop-db"}}}})
	sessions := trackerOpener{tracker: tracker, target: proxy.Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice",
		ExpiresAt: time.Now().Add(time.Hour), Backend: backURL, Transport: &http.Transport{}, Scope: []string{"shop", "shop-db"}}}
	front := httptest.NewServer(Handler(context.Background(), auth, sessions))
	defer front.Close()
	base := front.URL + "/sessions/sre/fix"
	const scoped = "session sre/fix is scoped to namespaces shop, shop-db: clustergate refuses "

	tests := []struct {
		name, method, path, upgrade string
		code                        int
		message                     string
	}{
		{name: "pods in scope", method: http.MethodGet, path: "/api/v1/namespaces/shop/pods", code: http.StatusOK},
		{name: "kubectl auth whoami", method: http.MethodPost, path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", code: http.StatusOK},
		{name: "pods of all namespaces", method: http.MethodGet, path: "/api/v1/pods", code: http.StatusForbidden,
			message: scoped + "a list of pods across all namespaces"},
		{name: "exec in another namespace over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/exec?command=sh", upgrade: "SPDY/3.1",
			code: http.StatusForbidden, message: scoped + "a create of pods/exec p in namespace default"},
		{name: "exec a deny rule holds over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/shop-db/pods/p/exec?command=sh", upgrade: "SPDY/3.1",
			code: http.StatusForbidden, message: "session sre/fix: denied by clustergate rule no-exec-in-shop-db: the database is not debugged live"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached.Load()
			req, _ := http.NewRequest(tt.method, base+tt.path, nil)
			req.Header.Set("Authorization", "Bearer alice")
			if tt.upgrade != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tt.upgrade)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var status metav1.Status
			if resp.StatusCode != tt.code || tt.message != "" && (json.Unmarshal(body, &status) != nil || status.Reason != metav1.StatusReasonForbidden ||
				!strings.Contains(status.Message, tt.message)) {
				t.Errorf("got %d %s, want %d saying %q", resp.StatusCode, body, tt.code, tt.message)
			}
			want := int64(0)
			if tt.code == http.StatusOK {
				want = 1
			}
			if n := reached.Load() - before; n != want {
				t.Errorf("%d requests reached the target, want %d", n, want)
			}
		})
	}

	t.Run("exec a deny rule holds over WebSocket", func(t *testing.T) {
		before := reached.Load()
		dialer := websocket.Dialer{Subprotocols: []string{"v5.channel.k8s.io"}}
		_, resp, err := dialer.Dial(strings.Replace(base, "http://", "ws://", 1)+"/api/v1/namespaces/shop-db/pods/p/exec?command=sh",
			http.Header{"Authorization": {"Bearer alice"}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("got %v, %v; want the upgrade refused with 403", resp, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "denied by clustergate rule no-exec-in-shop-db") || reached.Load() != before {
			t.Errorf("got %s after %d requests reached the target, want the rule's Status", body, reached.Load()-before)
		}
	})
}
