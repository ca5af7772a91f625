// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
)

// RecordWith records the interactive streams and the requests of every
// session this tracker serves; nil records nothing.
func (r *Tracker) RecordWith(recorder *recording.Recorder) { r.recorder = recorder }

// kubeletReads are the first segments of the kubelet's paths (k8s.io/kubernetes
// pkg/kubelet/server/server.go) that a GET through nodes/<node>/proxy may
// reach under --recording=required: they read the node's and its pods'
// state and run nothing. The kubelet's other paths are refused there: /run
// runs a command in a plain POST, /portForward is a tunnel, /checkpoint and
// /debug/flags/v write, /debug/pprof profiles the kubelet. Its /exec and
// /attach are recorded (kubeletStreams).
var kubeletReads = sets.New("healthz", "metrics", "stats", "pods", "runningpods", "allocatedPods", "configz", "flagz", "statusz", "containerLogs", "logs")

// kubeletStreams are the kubelet's interactive streams: the same protocols
// as a pod's exec and attach, which the kube-apiserver relays to them.
var kubeletStreams = sets.New("exec", "attach")

// errUnrecordable is why --recording=required refuses a request.
var errUnrecordable = errors.New("cannot be recorded; this server requires recordings (--recording=required)")

// inspection is what a request does on the target, as recording sees it.
type inspection struct {
	// stream describes the interactive stream the request opens, when
	// recorded is set: exec or attach of a pod, or the kubelet's exec or
	// attach through its node's proxy.
	stream   v1alpha1.RecordingInfo
	recorded bool
	// unrecordable names a way to run a command, or to reach one that runs,
	// that no recording covers: --recording=required refuses it; otherwise
	// only the request log keeps it. Empty for the rest, which runs nothing
	// and whose record is the request log.
	unrecordable string
	// starts names a write that starts a command from an object's spec
	// (a pod, or a workload's pod template), which no stream carries:
	// moderation refuses it (moderationFor); recording lets it pass, as
	// the request log keeps it.
	starts string
}

// writing names the verbs that write an object's spec.
var writing = map[string]string{"create": "creating", "update": "updating", "patch": "patching"}

// podStarters are the resources, by API group, whose writes start what a
// pod runs: pods themselves (kubectl run, kubectl debug node/NAME and
// --copy-to), and the workloads that make pods from a template. Their
// subresources (scale, status) start nothing new.
var podStarters = map[string]sets.Set[string]{
	"":      sets.New("pods", "replicationcontrollers"),
	"apps":  sets.New("deployments", "replicasets", "statefulsets", "daemonsets"),
	"batch": sets.New("jobs", "cronjobs"),
}

// inspect reads what a request does on the target from the target's own
// RequestInfo of its path, the way the target authorizes it. Under
// --recording=required only decoded streams and read-only ones (a watch, a
// pod's log) may upgrade; through a node's proxy only the kubelet's reads
// pass; a write of a pod's ephemeral containers, whose command runs as the
// container starts, before any attach, is refused. A plain request through
// pods/<name>/proxy or services/<name>/proxy passes: it is in the request
// log, and its body, which could hold a command for a server behind it, is
// not recorded (docs/security.md).
func inspect(tr *targetRequest) inspection {
	req := tr.req
	upgrade := httpstream.IsUpgradeRequest(req)
	info, err := tr.requestInfo()
	if err != nil || !info.IsResourceRequest || len(info.Parts) == 0 {
		if upgrade {
			return inspection{unrecordable: "an upgraded stream to " + info.Path}
		}
		return inspection{}
	}
	parts := info.Parts
	if info.Verb == "proxy" && len(parts) >= 2 {
		// The deprecated /api/v1/proxy/<resource>/<name>/<path>, which
		// targets no longer serve, is read as <resource>/<name>/proxy/<path>.
		parts = append([]string{parts[0], parts[1], "proxy"}, parts[2:]...)
	}
	var name, subresource string
	var rest []string
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		subresource, rest = parts[2], parts[3:]
	}
	query := req.URL.Query()
	pods := info.Resource == "pods"
	switch {
	case info.Resource == "nodes" && subresource == "proxy":
		return inspectKubelet(req.Method, upgrade, name, rest, query)
	case upgrade && pods && (subresource == "exec" || subresource == "attach"):
		return inspection{recorded: true, stream: v1alpha1.RecordingInfo{
			Subresource: subresource, PodNamespace: info.Namespace, Pod: name,
			Container: query.Get("container"), Command: query["command"],
			TTY: queryTrue(query, "tty"), Stdin: queryTrue(query, "stdin"),
		}}
	case upgrade && (info.Verb == "watch" && subresource == "" || pods && subresource == "log" && req.Method == http.MethodGet):
		return inspection{}
	case upgrade:
		return inspection{unrecordable: "an upgraded stream to " + strings.Join(parts[:min(len(parts), 3)], "/")}
	case pods && subresource == "ephemeralcontainers" && req.Method != http.MethodGet && req.Method != http.MethodHead:
		return inspection{unrecordable: "a " + req.Method + " of pods/" + name + "/ephemeralcontainers"}
	case subresource == "" && podStarters[info.APIGroup].Has(info.Resource) && writing[info.Verb] != "":
		return inspection{starts: writing[info.Verb] + " " + info.Resource}
	}
	return inspection{}
}

// inspectKubelet is inspect for a request to rest, the path on the kubelet,
// through nodes/<node>/proxy.
func inspectKubelet(method string, upgrade bool, node string, rest []string, query url.Values) inspection {
	first := ""
	if len(rest) > 0 {
		first = rest[0]
	}
	// /exec/<namespace>/<pod>/<container>, and /exec/<namespace>/<pod>/<uid>/<container>.
	if upgrade && kubeletStreams.Has(first) && (len(rest) == 4 || len(rest) == 5) {
		return inspection{recorded: true, stream: v1alpha1.RecordingInfo{
			Subresource: first, Node: node, PodNamespace: rest[1], Pod: rest[2], Container: rest[len(rest)-1],
			Command: query["command"], TTY: queryTrue(query, "tty"), Stdin: queryTrue(query, "stdin"),
		}}
	}
	// A node's name with a port (or a scheme) reaches that port of the
	// node, not its kubelet.
	if !upgrade && method == http.MethodGet && kubeletReads.Has(first) && !strings.Contains(node, ":") {
		return inspection{}
	}
	return inspection{unrecordable: "nodes/" + node + "/proxy/" + first}
}

// mayRunCommands tells the requests that are not upgrades and that
// --recording=required might refuse from the rest without parsing them
// into a RequestInfo: those with a segment that names a node's, pod's or
// service's proxy or a pod's ephemeral containers.
func mayRunCommands(path string) bool {
	for segment := range strings.SplitSeq(path, "/") {
		if segment == "proxy" || segment == "ephemeralcontainers" {
			return true
		}
	}
	return false
}

// inspectFor reads what recording makes of a request: nothing without a
// recorder, unless the session is moderated; an upgrade always; a plain
// request only under --recording=required or of a moderated session,
// which --recording=required may refuse with an error wrapping
// errUnrecordable.
func (r *Tracker) inspectFor(tr *targetRequest, moderated bool) (inspection, error) {
	rec := r.recorder
	if rec == nil && !moderated {
		return inspection{}, nil
	}
	required := rec != nil && rec.Required()
	switch {
	case httpstream.IsUpgradeRequest(tr.req):
	case moderated && (mayRunCommands(tr.path) || tr.req.Method != http.MethodGet && tr.req.Method != http.MethodHead):
		// A moderated session's writes may start pods.
	case required && mayRunCommands(tr.path):
	default:
		return inspection{}, nil
	}
	seen := inspect(tr)
	if seen.unrecordable != "" && required && !moderated {
		return seen, fmt.Errorf("%s %w", seen.unrecordable, errUnrecordable)
	}
	return seen, nil
}

// recordingSession is the part of a target a recording names.
func recordingSession(t Target) v1alpha1.RecordedSession {
	return v1alpha1.RecordedSession{Namespace: t.Namespace, Name: t.Name, UID: t.UID, Owner: t.Owner, Target: t.TargetName, Reason: t.Reason}
}

// openRecording checks that the session's request log keeps its entries
// and starts the recording of an interactive stream; under
// --recording=required, an error is the Status that refuses the request.
func (p *proxiedRequest) openRecording() error {
	rec := p.tracker.recorder
	if rec == nil {
		return nil
	}
	t := p.target
	if err := rec.RequestLogError(recordingSession(t)); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: this server must log every request (--recording=required) and cannot: %v",
			t.Namespace, t.Name, err))
	}
	if !p.inspected.recorded {
		return nil
	}
	info := p.inspected.stream
	info.RecordedSession, info.Way, info.Moderated = recordingSession(t), string(t.Way), p.moderated != nil
	stream, err := rec.OpenStream(p.ctx, info)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: this server must record interactive streams (--recording=required) and cannot: %v",
			t.Namespace, t.Name, err))
	}
	if p.moderated != nil && !stream.Recording() {
		stream.Close()
		return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s is moderated and its stream's recording, which moderators follow, cannot start: "+
			"the recording store fails", t.Namespace, t.Name))
	}
	p.stream = stream
	p.cw.recording = stream
	stream.OnFailure(func(err error) {
		p.recordingFailed.Store(&err)
		p.cw.closeHijacked(err)
	})
	return nil
}

// logRequest adds the request to its session's request log.
func (p *proxiedRequest) logRequest(req *http.Request, status int, closeReason string) {
	rec := p.tracker.recorder
	if rec == nil {
		return
	}
	entry := v1alpha1.RequestLogEntry{
		Time: p.start.UTC(), Way: string(p.target.Way), Method: req.Method, Path: p.path, Query: req.URL.RawQuery,
		Status: status, UserAgent: req.UserAgent(), Upgrade: req.Header.Get("Upgrade"), CloseReason: closeReason,
		Duration: p.tracker.clock.Since(p.start).Round(time.Millisecond).String(),
	}
	if p.body != nil {
		entry.BytesIn = p.body.n.Load() + p.cw.hijackedIn.Load()
		entry.BytesOut = p.cw.written.Load() + p.cw.hijackedOut.Load()
	}
	if p.stream != nil && p.stream.Recording() {
		entry.Stream = p.stream.ID()
	}
	if p.stream != nil {
		entry.Moderators = p.stream.Moderators()
	}
	rec.LogRequest(recordingSession(p.target), entry)
}

// statusOf is the HTTP status a refusal answers with.
func statusOf(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return http.StatusInternalServerError
}

// recordingConn hands every byte of a hijacked stream to its recording.
type recordingConn struct {
	net.Conn
	stream *recording.Stream
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.stream.FromClient(b[:n])
	return n, err
}

func (c *recordingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.stream.ToClient(b[:n])
	return n, err
}

// upgradeStatus reads the status code of the target's answer to an
// upgrade from its first bytes, "HTTP/1.1 101 ..."; 0 when they are not
// one.
func upgradeStatus(b []byte) int {
	const prefix = "HTTP/1.1 "
	if len(b) < len(prefix)+3 || string(b[:len(prefix)]) != prefix {
		return 0
	}
	code, err := strconv.Atoi(string(b[len(prefix) : len(prefix)+3]))
	if err != nil {
		return 0
	}
	return code
}
