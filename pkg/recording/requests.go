// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// maxFieldBytes bounds each string field of an entry, before JSON escapes
// it (at most sixfold): with every field at the bound, a line stays far
// below maxLineBytes.
const maxFieldBytes = 4 << 10

// requestBuffer holds a session's request log lines until the next flush.
type requestBuffer struct {
	key    requestLogKey
	prefix string
	lines  []byte
	// lost counts the entries that could not be kept since the last
	// flush, from lostFrom to lostTo; a marker entry records them.
	lost             int64
	lostFrom, lostTo time.Time
	// failed is why the last write of the log failed, until one succeeds.
	failed error
}

// requestLogKey is the session whose request log a buffer holds.
type requestLogKey struct {
	namespace, name string
	uid             types.UID
}

// maxBufferedRequests bounds a session's request log waiting for a write
// to the store; beyond it entries are lost, counted in a marker entry.
// Under --recording=required a session's new requests are refused once
// less than requiredHeadroom is left, so that the requests still running
// find room.
const (
	maxBufferedRequests = 4 << 20
	requiredHeadroom    = 1 << 20
)

// LogRequest adds a request to its session's log, written with the next
// flush.
func (r *Recorder) LogRequest(s v1alpha1.RecordedSession, req v1alpha1.RequestLogEntry) {
	req.Replica = r.cfg.Replica
	req.Query = RedactQuery(req.Query)
	bound(&req)
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
		b.addLost(1, r.cfg.Clock.Now())
	}
}

// addLost counts entries lost at a time.
func (b *requestBuffer) addLost(n int64, at time.Time) {
	b.noteLost(n, at, at)
	lostRequests.Add(float64(n))
}

// noteLost adds n entries lost from one time to another to those the
// marker will record.
func (b *requestBuffer) noteLost(n int64, from, to time.Time) {
	if n == 0 {
		return
	}
	if b.lost == 0 || from.Before(b.lostFrom) {
		b.lostFrom = from
	}
	if to.After(b.lostTo) {
		b.lostTo = to
	}
	b.lost += n
}

// marker appends the entry that records the lost entries, if any.
func (b *requestBuffer) marker(lines []byte, replica string) []byte {
	if b.lost == 0 {
		return lines
	}
	m := v1alpha1.RequestLogEntry{Time: b.lostFrom.UTC(), Duration: b.lostTo.Sub(b.lostFrom).String(), Replica: replica, Lost: b.lost,
		CloseReason: fmt.Sprintf("%d entries of this request log lost on this replica: more than %d MiB waited for the recording store",
			b.lost, maxBufferedRequests>>20)}
	return append(appendRequest(lines, &m), '\n')
}

// RequestLogError says why, under --recording=required, a session's new
// requests must be refused: its request log cannot keep their entries
// (the last write failed, entries were lost, or it is nearly full). It is
// nil under best-effort, which logs what it can and marks what it lost.
func (r *Recorder) RequestLogError(s v1alpha1.RecordedSession) error {
	if !r.Required() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.requests[requestLogKey{namespace: s.Namespace, name: s.Name, uid: s.UID}]
	switch {
	case b == nil:
		return nil
	case b.failed != nil:
		return fmt.Errorf("the request log cannot be written: %w", b.failed)
	case b.lost > 0:
		return fmt.Errorf("%d entries of the request log were lost since its last write", b.lost)
	case len(b.lines) > maxBufferedRequests-requiredHeadroom:
		return fmt.Errorf("more than %d MiB of the request log waits for the recording store", (maxBufferedRequests-requiredHeadroom)>>20)
	}
	return nil
}

// flushRequests writes every session's new log lines as a chunk of its own.
func (r *Recorder) flushRequests(ctx context.Context) {
	r.writeRequests(ctx, func(requestLogKey) bool { return true })
}

// FlushRequests writes this replica's new log lines of every session named
// name in namespace now, rather than at the next flush: a read of the
// session's history that follows it sees the requests this replica served
// until then (other replicas' lines wait for their next flush, at most
// FlushInterval).
func (r *Recorder) FlushRequests(ctx context.Context, namespace, name string) {
	r.writeRequests(ctx, func(k requestLogKey) bool { return k.namespace == namespace && k.name == name })
}

// writeRequests writes the new log lines of the sessions which picks, each
// as a chunk of its own; lines that cannot be written are kept for the
// next flush.
func (r *Recorder) writeRequests(ctx context.Context, which func(requestLogKey) bool) {
	r.mu.Lock()
	var pending []*requestBuffer
	for k, b := range r.requests {
		if which(k) {
			pending = append(pending, b)
			delete(r.requests, k)
		}
	}
	r.mu.Unlock()
	for _, b := range pending {
		r.mu.Lock()
		r.seq++
		key := fmt.Sprintf("%s%s-%s-%08d.jsonl", b.prefix, keySafe(r.cfg.Replica), r.boot, r.seq)
		r.mu.Unlock()
		data := b.marker(b.lines[:len(b.lines):len(b.lines)], r.cfg.Replica)
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := r.cfg.Store.Put(wctx, key, data)
		cancel()
		if err != nil {
			writeFailures.Inc()
			klog.ErrorS(err, "Request log not written; kept for the next flush", "key", key)
			b.failed = err
			r.requeue(b)
			continue
		}
		writtenBytes.Add(float64(len(data)))
	}
}

// requeue puts lines that could not be written before those logged since;
// when both do not fit, the older ones are lost, and counted.
func (r *Recorder) requeue(old *requestBuffer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.requests[old.key]
	if b == nil {
		r.requests[old.key] = old
		return
	}
	if len(old.lines)+len(b.lines) > maxBufferedRequests {
		b.addLost(int64(bytes.Count(old.lines, []byte{'\n'})), r.cfg.Clock.Now())
		old.lines = nil
	}
	b.lines = append(old.lines, b.lines...)
	b.noteLost(old.lost, old.lostFrom, old.lostTo)
	b.failed = old.failed
}

// bound cuts every string field of req to maxFieldBytes, at a
// character's start, and says which it cut.
func bound(req *v1alpha1.RequestLogEntry) {
	boundField(req, "way", &req.Way)
	boundField(req, "method", &req.Method)
	boundField(req, "path", &req.Path)
	boundField(req, "query", &req.Query)
	boundField(req, "duration", &req.Duration)
	boundField(req, "userAgent", &req.UserAgent)
	boundField(req, "stream", &req.Stream)
	boundField(req, "upgrade", &req.Upgrade)
	boundField(req, "closeReason", &req.CloseReason)
	boundField(req, "replica", &req.Replica)
}

func boundField(req *v1alpha1.RequestLogEntry, name string, value *string) {
	s := *value
	if len(s) <= maxFieldBytes {
		return
	}
	n := maxFieldBytes
	for n > maxFieldBytes-utf8.UTFMax && !utf8.RuneStart(s[n]) {
		n--
	}
	*value = s[:n]
	req.Truncated = append(req.Truncated, v1alpha1.TruncatedField{Field: name, Length: len(s)})
}

// sensitiveQuery are parts of query parameter names whose values are
// never logged: tokens and other secrets a client may put in a URL.
var sensitiveQuery = []string{"token", "auth", "password", "secret", "key", "cookie", "session", "signature", "credential"}

// RedactQuery returns a raw query as it was forwarded, pair by pair, with
// the values of parameters whose names suggest a credential replaced. A
// pair that does not parse (a bad escape, a semicolon), which the target
// skips, is kept too, its value replaced when anything in it suggests a
// credential: one bad pair never hides the others.
func RedactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i, pair := range strings.Split(raw, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		key, _, hasValue := strings.Cut(pair, "=")
		name := pair
		if _, err := url.QueryUnescape(pair); err == nil && !strings.Contains(pair, ";") {
			name, _ = url.QueryUnescape(key)
		}
		if hasValue && sensitive(name) {
			b.WriteString(key)
			b.WriteString("=REDACTED")
			continue
		}
		b.WriteString(pair)
	}
	return b.String()
}

func sensitive(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range sensitiveQuery {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}
