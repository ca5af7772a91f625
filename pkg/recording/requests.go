// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Request is one line of a session's request log.
type Request struct {
	Time time.Time `json:"time"`
	// Way is how the request came in: aggregated or dataplane.
	Way    string `json:"way,omitempty"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Query is the request's query with credentials taken out.
	Query     string `json:"query,omitempty"`
	Status    int    `json:"status"`
	BytesIn   int64  `json:"bytesIn"`
	BytesOut  int64  `json:"bytesOut"`
	Duration  string `json:"duration"`
	UserAgent string `json:"userAgent,omitempty"`
	// Stream is the recording of an upgraded request, if it has one.
	Stream  string `json:"stream,omitempty"`
	Upgrade string `json:"upgrade,omitempty"`
	// CloseReason says why a request ended, when not by itself.
	CloseReason string `json:"closeReason,omitempty"`
	Replica     string `json:"replica,omitempty"`
}

// requestBuffer holds a session's request log lines until the next flush.
type requestBuffer struct {
	key    requestLogKey
	prefix string
	lines  []byte
}

// requestLogKey is the session whose request log a buffer holds.
type requestLogKey struct {
	namespace, name string
	uid             types.UID
}

// maxBufferedRequests bounds a session's request log waiting for a write
// to the store; beyond it lines are dropped (and counted as failed writes).
const maxBufferedRequests = 4 << 20

// LogRequest adds a request to its session's log, written with the next
// flush.
func (r *Recorder) LogRequest(s Session, req Request) {
	req.Replica = r.cfg.Replica
	req.Query = RedactQuery(req.Query)
	key := requestLogKey{namespace: s.Namespace, name: s.Name, uid: s.UID}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.requests[key]
	if b == nil {
		b = &requestBuffer{key: key, prefix: path.Join(s.Namespace, s.Name, string(s.UID), requestsDir) + "/"}
		r.requests[key] = b
	}
	before := len(b.lines)
	b.lines = append(appendRequest(b.lines, &req), '\n')
	if len(b.lines) > maxBufferedRequests {
		b.lines = b.lines[:before]
		writeFailures.Inc()
	}
}

// flushRequests writes every session's new log lines as a chunk of its own.
func (r *Recorder) flushRequests(ctx context.Context) {
	r.mu.Lock()
	pending := r.requests
	r.requests = map[requestLogKey]*requestBuffer{}
	r.mu.Unlock()
	for _, b := range pending {
		r.mu.Lock()
		r.seq++
		key := fmt.Sprintf("%s%s-%s-%08d.jsonl", b.prefix, keySafe(r.cfg.Replica), r.boot, r.seq)
		r.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := r.cfg.Store.Put(wctx, key, b.lines)
		cancel()
		if err != nil {
			writeFailures.Inc()
			klog.ErrorS(err, "Request log not written; kept for the next flush", "key", key)
			r.requeue(b)
			continue
		}
		writtenBytes.Add(float64(len(b.lines)))
	}
}

// requeue puts lines that could not be written before those logged since.
func (r *Recorder) requeue(old *requestBuffer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.requests[old.key]
	if b == nil {
		r.requests[old.key] = old
		return
	}
	if len(old.lines)+len(b.lines) > maxBufferedRequests {
		return
	}
	b.lines = append(old.lines, b.lines...)
}

// sensitiveQuery are parts of query parameter names whose values are
// never logged: tokens and other secrets a client may put in a URL.
var sensitiveQuery = []string{"token", "auth", "password", "secret", "key", "cookie", "session", "signature", "credential"}

// RedactQuery returns a raw query with the values of parameters whose
// names suggest a credential replaced.
func RedactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsable query omitted)"
	}
	for name := range values {
		lower := strings.ToLower(name)
		for _, s := range sensitiveQuery {
			if strings.Contains(lower, s) {
				values[name] = []string{"REDACTED"}
				break
			}
		}
	}
	return values.Encode()
}
