package apiserver

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

var (
	defaultLongRunning = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	innerRequestInfo = &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	innerLongRunningSubresources = sets.New("attach", "exec", "portforward", "proxy")
)

// LongRunning says which requests are long-running, so that they are not cut
// at the request timeout. A request through sessions/proxy is long-running
// when the request it carries to the target is: a watch, an exec, attach,
// port-forward or proxy, a followed log, or any upgrade. Other proxied
// requests are ordinary and keep their timeout.
func LongRunning(r *http.Request, info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.APIGroup != clustergate.GroupName || info.Resource != "sessions" || info.Subresource != "proxy" {
		return defaultLongRunning(r, info)
	}
	if httpstream.IsUpgradeRequest(r) {
		return true
	}
	// Parts are sessions, <name>, proxy, then the target's path.
	inner := &http.Request{Method: r.Method, URL: &url.URL{Path: "/" + strings.Join(info.Parts[min(3, len(info.Parts)):], "/"), RawQuery: r.URL.RawQuery}}
	innerInfo, err := innerRequestInfo.NewRequestInfo(inner)
	if err != nil {
		return false
	}
	switch {
	case innerInfo.Verb == "watch":
		return true
	case innerLongRunningSubresources.Has(innerInfo.Subresource):
		return true
	case innerInfo.Subresource == "log":
		return r.URL.Query().Get("follow") == "true"
	}
	return false
}

var _ request.LongRunningRequestCheck = LongRunning
