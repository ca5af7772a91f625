// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/proxy"
)

// TestParsePath: a session is named by the path as sent, so that no escape
// moves a segment boundary away from where Istio's path rules see it.
func TestParsePath(t *testing.T) {
	tests := []struct {
		path                  string
		namespace, name, rest string
		inside, ok            bool
	}{
		{path: "/sessions/sre/fix-etcd/api/v1/namespaces", namespace: "sre", name: "fix-etcd", rest: "/api/v1/namespaces", inside: true, ok: true},
		{path: "/sessions/sre/fix-etcd/", namespace: "sre", name: "fix-etcd", rest: "/", inside: true, ok: true},
		{path: "/sessions/sre/fix-etcd", namespace: "sre", name: "fix-etcd", rest: "/", inside: true, ok: true},
		{path: "/sessions/sre/fix-etcd/api/v1/namespaces/a%2Fb", namespace: "sre", name: "fix-etcd", rest: "/api/v1/namespaces/a/b", inside: true, ok: true},
		{path: "/sessions/sre", inside: true},
		{path: "/sessions/", inside: true},
		{path: "/sessions/sre%2Ffix-etcd/api", inside: true},
		{path: "/sessions/sre/fix-etcd%2Fapi", inside: true},
		{path: "/sessions/sre/fix-etcd%2fapi", inside: true},
		{path: "/sessions/sre%5Cfix-etcd/api", inside: true},
		{path: "/sessions/sre/fix%2Detcd/api", inside: true},
		{path: "/sessions//sre/fix-etcd/api", inside: true},
		{path: "/sessions/SRE/fix-etcd/api", inside: true},
		{path: "/sessions/sre/Fix_etcd/api", inside: true},
		{path: "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix-etcd/proxy/api"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			u, err := url.Parse(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			ns, name, rest, inside, err := parsePath(u)
			if inside != tt.inside || (inside && err == nil) != tt.ok || ns != tt.namespace || name != tt.name || rest != tt.rest {
				t.Errorf("parsePath = %q %q %q %v %v, want %q %q %q %v ok=%v", ns, name, rest, inside, err, tt.namespace, tt.name, tt.rest, tt.inside, tt.ok)
			}
		})
	}
}

// opener records what it was asked to open and answers with err, or with a
// handler that writes "proxied".
type opener struct {
	err        error
	user       string
	namespace  string
	name, path string
	way        proxy.Way
}

func (o *opener) Open(ctx context.Context, name, path string, way proxy.Way, _ rest.Responder) (http.Handler, error) {
	u, _ := genericapirequest.UserFrom(ctx)
	o.user, o.name, o.path, o.way = u.GetName(), name, path, way
	o.namespace, _ = genericapirequest.NamespaceFrom(ctx)
	if o.err != nil {
		return nil, o.err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("proxied")) }), nil
}

// TestHandler: the caller must present a valid token; the owner check and
// every refusal are the session storage's, passed on as Status objects.
func TestHandler(t *testing.T) {
	auth := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		switch req.Header.Get("Authorization") {
		case "Bearer alice":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
		case "Bearer system":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "system:serviceaccount:sre:sa"}}, true, nil
		case "Bearer masters":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "mallory", Groups: []string{"oidc:sre", "system:masters"}}}, true, nil
		case "Bearer expired":
			return nil, false, errors.New("token is expired")
		}
		return nil, false, nil
	})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "clustergate.dev", Resource: "sessions/proxy"}, "fix-etcd",
		errors.New("only the session's owner may use its proxy"))
	tests := []struct {
		name      string
		path      string
		token     string
		openerErr error
		code      int
		reason    metav1.StatusReason
		opened    bool
	}{
		{name: "the owner gets through", path: "/sessions/sre/fix-etcd/api/v1/pods", token: "alice", code: http.StatusOK, opened: true},
		{name: "no token", path: "/sessions/sre/fix-etcd/api", code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized},
		{name: "a token that does not verify", path: "/sessions/sre/fix-etcd/api", token: "expired", code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized},
		{name: "someone else's session", path: "/sessions/sre/fix-etcd/api", token: "alice", openerErr: forbidden,
			code: http.StatusForbidden, reason: metav1.StatusReasonForbidden, opened: true},
		{name: "not a session's path", path: "/api/v1/pods", token: "alice", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "an escaped slash in the session's name", path: "/sessions/sre/fix-etcd%2Fapi", token: "alice", code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
		{name: "a system: user", path: "/sessions/sre/fix-etcd/api", token: "system", code: http.StatusForbidden, reason: metav1.StatusReasonForbidden},
		{name: "a system: group", path: "/sessions/sre/fix-etcd/api", token: "masters", code: http.StatusForbidden, reason: metav1.StatusReasonForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &opener{err: tt.openerErr}
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			Handler(context.Background(), auth, o).ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("code = %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if tt.reason != "" {
				var s metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.Kind != "Status" || s.Reason != tt.reason {
					t.Errorf("body = %s, want a Status with reason %s", rec.Body, tt.reason)
				}
			}
			if tt.opened {
				want := opener{err: tt.openerErr, user: "alice", namespace: "sre", name: "fix-etcd", path: tt.path[len("/sessions/sre/fix-etcd"):], way: proxy.WayDataPlane}
				if diff := cmp.Diff(want, *o, cmp.AllowUnexported(opener{}), cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) && errors.Is(b, a) })); diff != "" {
					t.Errorf("opened (-want +got):\n%s", diff)
				}
			} else if o.name != "" {
				t.Errorf("a refused request reached the sessions: %+v", o)
			}
		})
	}
}

// waitingOpener opens requests whose handler waits until its request ends
// or half a second passes, and says which.
type waitingOpener struct{ started, ended chan bool }

func (o waitingOpener) Open(context.Context, string, string, proxy.Way, rest.Responder) (http.Handler, error) {
	return http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		o.started <- true
		select {
		case <-req.Context().Done():
			o.ended <- true
		case <-time.After(500 * time.Millisecond):
			o.ended <- false
		}
	}), nil
}

// TestHandlerEndsStreamsWhenStopped: when the listener stops, a watch's or
// a stream's request ends at once; any other request is left to finish,
// which the graceful shutdown waits for.
func TestHandlerEndsStreamsWhenStopped(t *testing.T) {
	auth := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	tests := []struct {
		name, target, upgrade string
		ended                 bool
	}{
		{name: "get", target: "/sessions/sre/fix/api/v1/namespaces/default"},
		{name: "list", target: "/sessions/sre/fix/api/v1/pods?limit=500"},
		{name: "watch", target: "/sessions/sre/fix/api/v1/pods?watch=true", ended: true},
		{name: "followed log", target: "/sessions/sre/fix/api/v1/namespaces/x/pods/p/log?follow=true", ended: true},
		{name: "exec", target: "/sessions/sre/fix/api/v1/namespaces/x/pods/p/exec?command=sh", upgrade: "websocket", ended: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := waitingOpener{started: make(chan bool, 1), ended: make(chan bool, 1)}
			req := httptest.NewRequest(http.MethodGet, tt.target, nil)
			if tt.upgrade != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tt.upgrade)
			}
			go Handler(stop, auth, o).ServeHTTP(httptest.NewRecorder(), req)
			<-o.started
			cancel()
			if ended := <-o.ended; ended != tt.ended {
				t.Errorf("the request ended when the listener stopped: %v, want %v", ended, tt.ended)
			}
		})
	}
}

// TestDNSNames: the data plane's checks of a namespace and a session's name
// agree with k8s.io/apimachinery's validation, on names at the limits and on
// random ones from the characters that matter.
func TestDNSNames(t *testing.T) {
	names := []string{"", "a", "-", "a-", "-a", "a-b", "a.b", "a..b", ".a", "a.", "a.-b", "A", "a_b", "a b", "é", "0", "0-0",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
		strings.Repeat("a", 100) + "." + strings.Repeat("b", 100), strings.Repeat("a.", 126) + "a"}
	r := rand.New(rand.NewSource(1))
	const alphabet = "az09-.A_/"
	for range 20000 {
		b := make([]byte, r.Intn(10))
		for i := range b {
			b[i] = alphabet[r.Intn(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, name := range names {
		if got, want := dnsLabel(name), len(validation.IsDNS1123Label(name)) == 0; got != want {
			t.Errorf("dnsLabel(%q) = %v, want %v", name, got, want)
		}
		if got, want := dnsSubdomain(name), len(validation.IsDNS1123Subdomain(name)) == 0; got != want {
			t.Errorf("dnsSubdomain(%q) = %v, want %v", name, got, want)
		}
	}
}
