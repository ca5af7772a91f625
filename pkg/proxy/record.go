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
	"k8s.io/streaming/pkg/httpstream"

	"github.com/clustergate/clustergate/pkg/recording"
)

// RecordWith records the interactive streams and the requests of every
// session this registry serves; nil records nothing.
func (r *Registry) RecordWith(recorder *recording.Recorder) { r.recorder = recorder }

// interactive returns what the recording of a request says about it when
// the request opens an interactive stream on the target (exec or attach
// of a pod); ok is false for anything else, port-forward included, whose
// opening, close and byte counts only the request log keeps.
func interactive(req *http.Request, path string) (recording.StreamInfo, bool) {
	target := &http.Request{Method: req.Method, URL: &url.URL{Path: "/" + strings.TrimPrefix(path, "/"), RawQuery: req.URL.RawQuery}}
	info, err := targetRequestInfo.NewRequestInfo(target)
	if err != nil || info.Resource != "pods" || (info.Subresource != "exec" && info.Subresource != "attach") {
		return recording.StreamInfo{}, false
	}
	query := req.URL.Query()
	return recording.StreamInfo{
		Subresource: info.Subresource, PodNamespace: info.Namespace, Pod: info.Name,
		Container: query.Get("container"), Command: query["command"],
		TTY: queryTrue(query, "tty"), Stdin: queryTrue(query, "stdin"),
	}, true
}

// recordingSession is the part of a target a recording names.
func recordingSession(t Target) recording.Session {
	return recording.Session{Namespace: t.Namespace, Name: t.Name, UID: t.UID, Owner: t.Owner, Target: t.TargetName, Reason: t.Reason}
}

// openRecording checks that the session's request log keeps its entries
// and starts the recording of an interactive stream; under
// --recording=required, an error is the Status that refuses the request.
func (p *proxiedRequest) openRecording(req *http.Request) error {
	rec := p.registry.recorder
	if rec == nil {
		return nil
	}
	t := p.target
	if err := rec.RequestLogError(recordingSession(t)); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: this server must log every request (--recording=required) and cannot: %v",
			t.Namespace, t.Name, err))
	}
	if !httpstream.IsUpgradeRequest(req) {
		return nil
	}
	info, ok := interactive(req, p.path)
	if !ok {
		return nil
	}
	info.Session, info.Way = recordingSession(t), string(t.Way)
	stream, err := rec.OpenStream(p.ctx, info)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s: this server must record interactive streams (--recording=required) and cannot: %v",
			t.Namespace, t.Name, err))
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
	rec := p.registry.recorder
	if rec == nil {
		return
	}
	entry := recording.Request{
		Time: p.start.UTC(), Way: string(p.target.Way), Method: req.Method, Path: p.path, Query: req.URL.RawQuery,
		Status: status, UserAgent: req.UserAgent(), Upgrade: req.Header.Get("Upgrade"), CloseReason: closeReason,
		Duration: p.registry.clock.Since(p.start).Round(time.Millisecond).String(),
	}
	if p.body != nil {
		entry.BytesIn = p.body.n.Load() + p.cw.hijackedIn.Load()
		entry.BytesOut = p.cw.written.Load() + p.cw.hijackedOut.Load()
	}
	if p.stream != nil && p.stream.Recording() {
		entry.Stream = p.stream.ID()
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
