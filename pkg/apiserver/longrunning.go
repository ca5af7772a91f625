// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/proxy"
	sessionstorage "github.com/clustergate/clustergate/pkg/registry/session/storage"
)

var defaultLongRunning = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"))

// LongRunning says which requests are long-running, so that they are not cut
// at the request timeout. A request through sessions/proxy is long-running
// when the request it carries to the target is (proxy.LongRunning); other
// proxied requests are ordinary and keep their timeout. A read of
// sessions/recordings that follows (?follow=true) is long-running.
func LongRunning(r *http.Request, info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.APIGroup != clustergate.GroupName || info.Resource != "sessions" {
		return defaultLongRunning(r, info)
	}
	switch info.Subresource {
	case "recordings":
		// A follow of a live stream or a request log runs as long as they do.
		return sessionstorage.Following(r)
	case "proxy":
	default:
		return defaultLongRunning(r, info)
	}
	// Parts are sessions, <name>, proxy, then the target's path.
	return proxy.LongRunning(r, strings.Join(info.Parts[min(3, len(info.Parts)):], "/"))
}

var _ request.LongRunningRequestCheck = LongRunning
