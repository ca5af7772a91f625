// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// allRequests reads the test session's whole request log in pages of
// limit (0: one).
func allRequests(ctx context.Context, reader Reader, limit int) ([]v1alpha1.RequestLogEntry, error) {
	var all []v1alpha1.RequestLogEntry
	next := ""
	for {
		var err error
		next, err = reader.Requests(ctx, "sre", "fix", limit, next, func(r *v1alpha1.RequestLogEntry) error {
			all = append(all, *r)
			return nil
		})
		if err != nil || next == "" {
			return all, err
		}
	}
}

// TestRequestLogKeepsEveryEntry: whatever a request carries, its entry and
// those after it are read back; a long field is cut and the entry says
// so; the query is logged as forwarded, one malformed pair included.
func TestRequestLogKeepsEveryEntry(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	long := strings.Repeat("\x01", 200<<10) // escaped sixfold: 1.2 MB of JSON
	tests := []struct {
		name   string
		logged []v1alpha1.RequestLogEntry
		want   []v1alpha1.RequestLogEntry
	}{
		{
			name: "a 200 KiB user agent, then ordinary requests",
			logged: []v1alpha1.RequestLogEntry{
				{Time: at, Method: "GET", Path: "/a", UserAgent: long},
				{Time: at.Add(time.Second), Method: "GET", Path: "/b"},
				{Time: at.Add(2 * time.Second), Method: "GET", Path: "/c"},
			},
			want: []v1alpha1.RequestLogEntry{
				{Time: at, Method: "GET", Path: "/a", UserAgent: long[:maxFieldBytes], Replica: "r1", Truncated: []v1alpha1.TruncatedField{{Field: "userAgent", Length: 200 << 10}}},
				{Time: at.Add(time.Second), Method: "GET", Path: "/b", Replica: "r1"},
				{Time: at.Add(2 * time.Second), Method: "GET", Path: "/c", Replica: "r1"},
			},
		},
		{
			name: "every field too long, cut at a character",
			logged: []v1alpha1.RequestLogEntry{{Time: at, Method: strings.Repeat("é", 3000), Path: strings.Repeat("/", 5000), Query: "q=" + strings.Repeat("x", 5000),
				CloseReason: strings.Repeat("日", 2000)}},
			want: []v1alpha1.RequestLogEntry{{Time: at, Method: strings.Repeat("é", 2048), Path: strings.Repeat("/", 4096), Query: "q=" + strings.Repeat("x", 4094),
				CloseReason: strings.Repeat("日", 1365), Replica: "r1",
				Truncated: []v1alpha1.TruncatedField{{Field: "method", Length: 6000}, {Field: "path", Length: 5000}, {Field: "query", Length: 5002}, {Field: "closeReason", Length: 6000}}}},
		},
		{
			name:   "a malformed pair: the query as forwarded, credentials out",
			logged: []v1alpha1.RequestLogEntry{{Time: at, Method: "GET", Path: "/api/v1/pods", Query: "labelSelector=app%3Dx&bad=%zz&access_token=secret&limit=5&a=1;token=secret"}},
			want: []v1alpha1.RequestLogEntry{{Time: at, Method: "GET", Path: "/api/v1/pods", Replica: "r1",
				Query: "labelSelector=app%3Dx&bad=%zz&access_token=REDACTED&limit=5&a=REDACTED"}},
		},
		{
			name:   "an escaped credential name",
			logged: []v1alpha1.RequestLogEntry{{Time: at, Method: "GET", Path: "/", Query: "%74oken=secret&watch=1"}},
			want:   []v1alpha1.RequestLogEntry{{Time: at, Method: "GET", Path: "/", Replica: "r1", Query: "%74oken=REDACTED&watch=1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			r := newTestRecorder(t, local, ModeBestEffort)
			for _, req := range tt.logged {
				r.LogRequest(testSession, req)
			}
			r.flushRequests(ctx)
			got, err := allRequests(ctx, Reader{Store: local}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequestLogReadWritesThisReplicasLines: a history read right after a
// request includes it, without waiting for the next flush; other
// sessions' lines stay for that flush.
func TestRequestLogReadWritesThisReplicasLines(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	other := testSession
	other.Name, other.UID = "other", "uid-2"
	tests := []struct {
		name   string
		flush  bool
		logged int
		want   int
	}{
		{name: "the reader writes the session's lines first", flush: true, logged: 3, want: 3},
		{name: "without it they wait for the flush", flush: false, logged: 3, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			r := newTestRecorder(t, local, ModeBestEffort)
			for i := range tt.logged {
				r.LogRequest(testSession, v1alpha1.RequestLogEntry{Time: at.Add(time.Duration(i) * time.Second), Method: "GET", Path: fmt.Sprintf("/%d", i)})
			}
			r.LogRequest(other, v1alpha1.RequestLogEntry{Time: at, Method: "GET", Path: "/other"})
			reader := Reader{Store: local}
			if tt.flush {
				reader.Flush = r.FlushRequests
			}
			got, err := allRequests(ctx, reader, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("read %d entries, want %d: %+v", len(got), tt.want, got)
			}
			r.mu.Lock()
			_, otherKept := r.requests[requestLogKey{namespace: other.Namespace, name: other.Name, uid: other.UID}]
			kept := len(r.requests)
			r.mu.Unlock()
			if wantKept := map[bool]int{true: 1, false: 2}[tt.flush]; !otherKept || kept != wantKept {
				t.Errorf("after the read %d sessions' lines wait for the flush (the other one's: %v), want %d with the other one's", kept, otherKept, wantKept)
			}
		})
	}
}

// TestRequestLogLosesNothingSilently: entries beyond what a flush holds
// are counted in a marker entry; under required the session's requests
// are refused while its log cannot keep their entries, and accepted again
// once it is written.
func TestRequestLogLosesNothingSilently(t *testing.T) {
	ctx := context.Background()
	entry := v1alpha1.RequestLogEntry{Method: "GET", Path: "/api/v1/pods", UserAgent: strings.Repeat("u", maxFieldBytes)}
	const logged = 1200 // of about 4.2 KB each: more than maxBufferedRequests
	for _, policy := range []Mode{ModeBestEffort, ModeRequired} {
		t.Run(string(policy), func(t *testing.T) {
			local := newLocalStore(t)
			r := newTestRecorder(t, local, policy)
			refusedAt := -1
			for i := range logged {
				if err := r.RequestLogError(testSession); err != nil && refusedAt < 0 {
					refusedAt = i
					if !strings.Contains(err.Error(), "MiB of the request log waits") {
						t.Errorf("refused because %v", err)
					}
				}
				r.LogRequest(testSession, entry)
			}
			switch {
			case policy == ModeRequired && (refusedAt < 0 || refusedAt*4200 > maxBufferedRequests-requiredHeadroom+4300):
				t.Errorf("required: refused from entry %d, want from about 3 MiB", refusedAt)
			case policy == ModeBestEffort && refusedAt >= 0:
				t.Errorf("best-effort: refused from entry %d", refusedAt)
			}
			r.flushRequests(ctx)
			if err := r.RequestLogError(testSession); err != nil {
				t.Errorf("written, and still refused: %v", err)
			}
			got, err := allRequests(ctx, Reader{Store: local}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var kept, lost int64
			for _, g := range got {
				if g.Lost > 0 {
					lost += g.Lost
					if !strings.Contains(g.CloseReason, fmt.Sprintf("%d entries", g.Lost)) {
						t.Errorf("marker %+v", g)
					}
				} else {
					kept++
				}
			}
			if kept+lost != logged || lost == 0 {
				t.Errorf("%d entries kept, %d counted lost; %d logged", kept, lost, logged)
			}
		})
	}
	t.Run("required, the store failing", func(t *testing.T) {
		switching := &switchStore{Store: newLocalStore(t), fail: true}
		r := newTestRecorder(t, switching, ModeRequired)
		r.LogRequest(testSession, entry)
		r.flushRequests(ctx)
		if err := r.RequestLogError(testSession); err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("a write failed, refusal %v", err)
		}
		switching.fail = false
		r.flushRequests(ctx)
		if err := r.RequestLogError(testSession); err != nil {
			t.Errorf("written, and still refused: %v", err)
		}
		if got, err := allRequests(ctx, Reader{Store: switching}, 0); err != nil || len(got) != 1 {
			t.Errorf("request log %d entries, %v", len(got), err)
		}
	})
}

// TestRequestLogReadErrors: a line the reader cannot read is an error,
// never a silent end of its chunk.
func TestRequestLogReadErrors(t *testing.T) {
	good := `{"time":"2026-12-03T09:00:00Z","method":"GET","path":"/a","status":200,"bytesIn":0,"bytesOut":0,"duration":"1ms"}`
	tests := []struct {
		name, chunk, want string
	}{
		{"a broken line", good + "\n{\"time\":\n" + good + "\n", "line 2"},
		{"a line of 2 MiB", good + "\n" + `{"time":"2026-12-03T09:00:00Z","path":"` + strings.Repeat("x", 2<<20) + "\"\n" + good + "\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local := newLocalStore(t)
			if err := local.Put(ctx, "sre/fix/uid-1/requests/r1-1-00000001.jsonl", []byte(tt.chunk)); err != nil {
				t.Fatal(err)
			}
			got, err := allRequests(ctx, Reader{Store: local}, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("read %d entries, error %v; want one saying %q", len(got), err, tt.want)
			}
		})
	}
}

// TestRequestLogPaging: pages of any size hand every entry exactly once,
// in the order of a read without pages; a token not made by the reader is
// refused.
func TestRequestLogPaging(t *testing.T) {
	ctx := context.Background()
	local := newLocalStore(t)
	r := newTestRecorder(t, local, ModeBestEffort)
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i := range 50 {
		// Entries logged out of time order within a flush, as requests end.
		r.LogRequest(testSession, v1alpha1.RequestLogEntry{Time: at.Add(time.Duration((i*7)%50) * time.Second), Path: fmt.Sprintf("/%d", i)})
		if i%9 == 8 {
			r.flushRequests(ctx)
		}
	}
	r.flushRequests(ctx)
	reader := Reader{Store: local}
	whole, err := allRequests(ctx, reader, 0)
	if err != nil || len(whole) != 50 {
		t.Fatalf("%d entries, %v", len(whole), err)
	}
	seen := map[string]bool{}
	for _, w := range whole {
		seen[w.Path] = true
	}
	if len(seen) != 50 {
		t.Errorf("%d distinct entries of 50", len(seen))
	}
	for _, limit := range []int{1, 7, 9, 10, 49, 50, 1000} {
		paged, err := allRequests(ctx, reader, limit)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(whole, paged); diff != "" {
			t.Errorf("pages of %d (-whole +paged):\n%s", limit, diff)
		}
	}
	for _, token := range []string{"x", "e30", "!!"} {
		if _, err := reader.Requests(ctx, "sre", "fix", 1, token, func(*v1alpha1.RequestLogEntry) error { return nil }); !errors.Is(err, ErrBadContinue) {
			t.Errorf("continue %q: %v", token, err)
		}
	}
}
