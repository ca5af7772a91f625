// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// oneBackend reaches every session's target at one server.
type oneBackend struct{ backend credentials.Backend }

func (b oneBackend) Backend(types.UID) (credentials.Backend, error) { return b.backend, nil }

// TestProxyHoldsScopeAndDenyRules: sessions/proxy holds a request to the
// scope, access level and target of the session it reads, both ways in.
func TestProxyHoldsScopeAndDenyRules(t *testing.T) {
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(target.Close)
	u, _ := url.Parse(target.URL)
	tracker := proxy.NewTracker(clock.RealClock{}, proxy.Limits{})
	tracker.EnforceAccess(&sessionaccess.Configuration{DenyRules: []sessionaccess.DenyRule{{
		Name: "no-configmaps-for-viewers-on-local", Levels: []string{"viewer"}, Targets: []string{"shoot/local"}, Resources: []string{"configmaps"}}}})
	scheme := registrytest.Scheme()
	policy := validation.DefaultSessionLimits()
	policy.ApprovalGroups = sets.New("admin")
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{Limits: policy,
		Proxy: ProxyConfig{Tracker: tracker, Backends: oneBackend{credentials.Backend{URL: u, Transport: target.Client().Transport.(*http.Transport)}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Session.Destroy)
	session := newSession("scoped", "alice", "local", nil)
	session.Spec.Scope = &clustergate.SessionScope{Namespaces: []string{"shop"}}
	create(t, s, session)
	session = get(t, s, "scoped")
	session.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "CredentialsMinted",
		LastTransitionTime: metav1.Now()}}
	if _, err := update(registrytest.Context(ns), s.Status, session); err != nil {
		t.Fatal(err)
	}
	ctx := genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: "alice"})

	tests := []struct {
		path    string
		code    int
		message string
	}{
		{path: "/api/v1/namespaces/shop/pods", code: http.StatusOK},
		{path: "/api/v1/namespaces/kube-system/pods", code: http.StatusForbidden,
			message: "session sre/scoped is scoped to namespaces shop: clustergate refuses a list of pods in namespace kube-system"},
		{path: "/api/v1/namespaces/shop/configmaps", code: http.StatusForbidden,
			message: "session sre/scoped: denied by clustergate rule no-configmaps-for-viewers-on-local"},
	}
	for _, way := range []proxy.Way{proxy.WayAggregated, proxy.WayDataPlane} {
		for _, tt := range tests {
			w := httptest.NewRecorder()
			responder := &statusResponder{w: w}
			h, err := s.Proxy.Open(ctx, "scoped", tt.path, way, responder)
			if err != nil {
				t.Fatalf("%s %s: %v", way, tt.path, err)
			}
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/proxy"+tt.path, nil))
			var status metav1.Status
			if w.Code != tt.code || tt.message != "" && (json.Unmarshal(w.Body.Bytes(), &status) != nil || !strings.Contains(status.Message, tt.message)) {
				t.Errorf("%s %s: got %d %s, want %d saying %q", way, tt.path, w.Code, w.Body, tt.code, tt.message)
			}
		}
	}
}
