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
// owner check, the same refusals, the same registry of proxied requests
// that ends every stream when its session ends.
package dataplane

import (
	"context"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/proxy"
)

// PathPrefix starts every path the data plane serves.
const PathPrefix = "/sessions/"

// SessionPath is the path below which the data plane serves the session
// namespace/name; the path on the target follows it. The sessions'
// AuthorizationPolicies and kubeconfigs are made from it, so the three
// cannot disagree.
func SessionPath(namespace, name string) string {
	return PathPrefix + namespace + "/" + name + "/"
}

// parsePath splits a data-plane path into the session's namespace and name
// and the path on the target.
func parsePath(p string) (namespace, name, path string, ok bool) {
	rest, found := strings.CutPrefix(p, PathPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", "", "", false
	}
	namespace, name = parts[0], parts[1]
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", "", false
	}
	path = "/"
	if len(parts) == 3 {
		path += parts[2]
	}
	return namespace, name, path, true
}

// Opener opens a proxied request to a session for the user in ctx, or
// refuses with a Status error; the session storage is the real one.
type Opener interface {
	Open(ctx context.Context, name, path string, way proxy.Way, responder rest.Responder) (http.Handler, error)
}

// Handler serves the data plane: it authenticates the caller by bearer
// JWT, and hands the request to sessions, which check that the caller owns
// the session.
func Handler(auth authenticator.Request, sessions Opener) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		responder := statusResponder{w: w}
		namespace, name, path, ok := parsePath(req.URL.Path)
		if !ok {
			responder.Error(notFound(req.URL.Path))
			return
		}
		resp, ok, err := auth.AuthenticateRequest(req)
		if err != nil || !ok {
			responder.Error(unauthorized(err))
			return
		}
		ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(req.Context(), resp.User), namespace)
		h, err := sessions.Open(ctx, name, path, proxy.WayDataPlane, responder)
		if err != nil {
			responder.Error(err)
			return
		}
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}
