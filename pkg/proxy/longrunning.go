package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

var (
	targetRequestInfo = &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	longRunningSubresources = sets.New("attach", "exec", "portforward", "proxy")
)

// LongRunning says whether a proxied request to path on the target is
// long-running: a watch, an exec, attach, port-forward or proxy, a followed
// log, or any upgrade. The request timeout does not cut such requests; the
// proxy bounds them when their session ends.
func LongRunning(req *http.Request, path string) bool {
	if httpstream.IsUpgradeRequest(req) {
		return true
	}
	target := &http.Request{Method: req.Method, URL: &url.URL{Path: "/" + strings.TrimPrefix(path, "/"), RawQuery: req.URL.RawQuery}}
	info, err := targetRequestInfo.NewRequestInfo(target)
	if err != nil {
		return false
	}
	switch {
	case info.Verb == "watch":
		return true
	case longRunningSubresources.Has(info.Subresource):
		return true
	case info.Subresource == "log":
		return req.URL.Query().Get("follow") == "true"
	}
	return false
}
