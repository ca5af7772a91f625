// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package dataplane serves sessions directly, beside the aggregated
// sessions/proxy subresource: on a listener of its own, at
// /sessions/<namespace>/<name>/<path on the target>, to callers who prove
// who they are with a bearer JWT that the server verifies itself, with the
// JWT authenticator kube-apiserver uses, configured in kube-apiserver's own
// AuthenticationConfiguration format. Nothing else on this listener is
// trusted: no client certificate, no X-Remote-* header, no claim a gateway
// in front forwards.
//
// Behind the authentication it is the same path as sessions/proxy: the same
// owner check, the same refusals, the same tracker of proxied requests
// that ends every stream when its session ends.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/proxy"
)

// parsePath splits a data-plane request's path into the session's
// namespace and name and the path on the target. The namespace and name are
// read from the path as sent (escaped), so that %2F or %5C cannot move a
// segment boundary: Istio's path rules match the escaped path, and a name
// read from the decoded one could reach a session its policy does not
// cover. ok is false for a path outside PathPrefix; err says why a path
// inside it names no session.
func parsePath(u *url.URL) (namespace, name, path string, ok bool, err error) {
	rest, found := strings.CutPrefix(u.EscapedPath(), v1alpha1.DataPlanePathPrefix)
	if !found {
		return "", "", "", false, nil
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", "", "", true, errors.New("the path names no session")
	}
	namespace, name = parts[0], parts[1]
	if !dnsLabel(namespace) || !dnsSubdomain(name) {
		return "", "", "", true, fmt.Errorf("%q and %q are not a session's namespace and name", namespace, name)
	}
	// The escaped and the decoded path agree up to here: a DNS name has no
	// escapes.
	path = strings.TrimPrefix(u.Path, v1alpha1.DataPlaneSessionPath(namespace, name))
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return namespace, name, path, true, nil
}

// dnsLabel is validation.IsDNS1123Label without its regular expression,
// which every data-plane request paid for: a namespace.
func dnsLabel(s string) bool {
	return len(s) <= validation.DNS1123LabelMaxLength && dnsLabelChars(s)
}

// dnsSubdomain is validation.IsDNS1123Subdomain without its regular
// expression: a session's name.
func dnsSubdomain(s string) bool {
	if len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !dnsLabelChars(label) {
			return false
		}
	}
	return true
}

// dnsLabelChars matches [a-z0-9]([-a-z0-9]*[a-z0-9])?, a DNS-1123 label of
// any length.
func dnsLabelChars(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// systemName tells names of the system: space, which Kubernetes reserves
// for its own components: no data-plane identity may carry one.
func systemName(name string) bool {
	return strings.HasPrefix(name, "system:")
}

// refuseSystemIdentity refuses a caller whose mapped user or groups are in
// the system: space, which a data-plane issuer must never produce (see
// CheckIdentityMappings); a JWT issuer that does is misconfigured.
func refuseSystemIdentity(u user.Info) error {
	bad := []string{}
	if systemName(u.GetName()) {
		bad = append(bad, "user "+u.GetName())
	}
	for _, g := range u.GetGroups() {
		if systemName(g) {
			bad = append(bad, "group "+g)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "sessions/proxy"}, "",
		fmt.Errorf("the data plane serves no identity of the system: space (%s)", strings.Join(bad, ", ")))
}

// Opener opens a proxied request to a session for the user in ctx, or
// refuses with a Status error; the session storage is the real one.
type Opener interface {
	Open(ctx context.Context, name, path string, way proxy.Way, responder rest.Responder) (http.Handler, error)
}

// Handler serves the data plane: it authenticates the caller by bearer
// JWT, and hands the request to sessions, which check that the caller owns
// the session. Watches and streams end when stop ends, so that a graceful
// shutdown of the listener waits only for requests that finish by
// themselves.
func Handler(stop context.Context, auth authenticator.Request, sessions Opener) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		responder := statusResponder{w: w}
		namespace, name, path, ok, err := parsePath(req.URL)
		switch {
		case !ok:
			responder.Error(notFound(req.URL.Path))
			return
		case err != nil:
			responder.Error(apierrors.NewBadRequest(err.Error()))
			return
		}
		reqCtx := req.Context()
		if proxy.LongRunning(req, path) {
			var cancel context.CancelFunc
			reqCtx, cancel = context.WithCancel(reqCtx)
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
		} else {
			growStack()
		}
		resp, ok, err := auth.AuthenticateRequest(req)
		if err != nil || !ok {
			responder.Error(unauthorized(err))
			return
		}
		if err := refuseSystemIdentity(resp.User); err != nil {
			responder.Error(err)
			return
		}
		ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(reqCtx, resp.User), namespace)
		h, err := sessions.Open(ctx, name, path, proxy.WayDataPlane, responder)
		if err != nil {
			responder.Error(err)
			return
		}
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}
