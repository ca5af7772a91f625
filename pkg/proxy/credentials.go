// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"strings"
)

// stripCallerCredentials removes the caller's credentials and identity
// claims: the target sees only the session's credentials.
func stripCallerCredentials(h http.Header) {
	for name := range h {
		canonical := http.CanonicalHeaderKey(name)
		for _, prefix := range strippedHeaderPrefixes {
			if strings.HasPrefix(canonical, prefix) {
				delete(h, name)
				break
			}
		}
	}
	// A WebSocket client may carry a bearer token as a subprotocol.
	var protocols []string
	for _, value := range h.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, bearerProtocolPrefix) {
				protocols = append(protocols, p)
			}
		}
	}
	h.Del("Sec-Websocket-Protocol")
	if len(protocols) > 0 {
		h.Set("Sec-Websocket-Protocol", strings.Join(protocols, ", "))
	}
}

// bearerProtocolPrefix marks a WebSocket subprotocol that carries a bearer
// token, as Kubernetes clients send it.
const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."
