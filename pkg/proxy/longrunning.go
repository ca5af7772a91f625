// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/streaming/pkg/httpstream"
)

var (
	targetRequestInfo = &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	longRunningSubresources = sets.New("attach", "exec", "portforward", "proxy")
)

// newRequestInfo parses a request as the target sees it; a variable, so
// that tests count how often a request is parsed.
var newRequestInfo = targetRequestInfo.NewRequestInfo

// targetRequest is a proxied request as its target sees it: the caller's
// request, the path on the target, and their RequestInfo, parsed at most
// once, by the first step that needs it (long-running, recording, the
// session's scope and the deny rules), and not at all by a request none of
// them needs to look into.
type targetRequest struct {
	req  *http.Request
	path string

	parsed bool
	info   *request.RequestInfo
	err    error
}

// requestInfo is the RequestInfo of the request on the target, as the
// target authorizes it.
func (tr *targetRequest) requestInfo() (*request.RequestInfo, error) {
	if !tr.parsed {
		tr.parsed = true
		target := &http.Request{Method: tr.req.Method, URL: &url.URL{Path: "/" + strings.TrimPrefix(tr.path, "/"), RawQuery: tr.req.URL.RawQuery}}
		tr.info, tr.err = newRequestInfo(target)
	}
	return tr.info, tr.err
}

// LongRunning says whether a proxied request to path on the target is
// long-running: a watch, an exec, attach, port-forward or proxy, a followed
// log, or any upgrade. The request timeout does not cut such requests; the
// proxy bounds them when their session ends.
func LongRunning(req *http.Request, path string) bool {
	longRunning, _ := classify(&targetRequest{req: req, path: path})
	return longRunning
}

// classify is LongRunning, and whether the request is a watch.
func classify(tr *targetRequest) (longRunning, watch bool) {
	if httpstream.IsUpgradeRequest(tr.req) {
		return true, false
	}
	if plainRequest(tr.req.URL.RawQuery, tr.path) {
		return false, false
	}
	return classifyByInfo(tr)
}

// classifyByInfo is classify for a request that is not an upgrade, from
// the RequestInfo of the request on the target.
func classifyByInfo(tr *targetRequest) (longRunning, watch bool) {
	info, err := tr.requestInfo()
	if err != nil {
		return false, false
	}
	switch {
	case info.Verb == "watch":
		return true, true
	case longRunningSubresources.Has(info.Subresource):
		return true, false
	case info.Subresource == "log":
		return queryTrue(tr.req.URL.Query(), "follow"), false
	}
	return false, false
}

// longRunningWords are the path segments without which no request is
// long-running: the watch prefix and the subresources LongRunning looks for.
var longRunningWords = sets.New("watch", "attach", "exec", "portforward", "proxy", "log")

// plainRequest tells most requests that are not long-running without
// parsing them into a RequestInfo, which every proxied request paid for:
// those with no path segment that could make them one and no watch in
// their query (a query with escapes is parsed).
func plainRequest(rawQuery, path string) bool {
	if strings.Contains(rawQuery, "watch") || strings.Contains(rawQuery, "%") {
		return false
	}
	for segment := range strings.SplitSeq(path, "/") {
		if longRunningWords.Has(segment) {
			return false
		}
	}
	return true
}

// queryTrue says whether the boolean query parameter name is true the way
// the target's kube-apiserver decodes it into its options: any value but
// "0" and "false" (in any case) is true, the empty one included, so that
// follow=1, follow=TRUE and follow=yes all follow.
func queryTrue(query url.Values, name string) bool {
	values, ok := query[name]
	if !ok {
		return false
	}
	var b bool
	// The decoder's own conversion; it never fails.
	_ = runtime.Convert_Slice_string_To_bool(&values, &b, nil)
	return b
}
