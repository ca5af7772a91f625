// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// writeCounter counts the writes that reach the client's response writer
// and tells seen of each.
type writeCounter struct {
	*httptest.ResponseRecorder
	writes int
	seen   chan<- struct{}
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes++
	select {
	case w.seen <- struct{}{}:
	default:
	}
	return w.ResponseRecorder.Write(b)
}

// TestResponseBuffering checks that a response the client reads whole goes
// on in few writes however small the target's, and that a watch's events go
// on one by one as they come.
func TestResponseBuffering(t *testing.T) {
	const pieces = 64
	piece := append(bytes.Repeat([]byte("x"), 1023), '\n')
	seen := make(chan struct{}, pieces)
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for range pieces {
			_, _ = w.Write(piece)
			w.(http.Flusher).Flush()
			// A watch's next event comes once the client has this one.
			if r.URL.Query().Has("watch") {
				select {
				case <-seen:
				case <-time.After(5 * time.Second):
					t.Error("a watch event did not reach the client")
					return
				}
			}
		}
	})
	for _, tt := range []struct {
		name, query          string
		minWrites, maxWrites int
	}{
		{"a LIST goes on in buffer-sized writes", "", 1, pieces * len(piece) / bodyBufferSize},
		{"a watch's events go on as they come", "?watch=true", pieces, pieces},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &writeCounter{ResponseRecorder: httptest.NewRecorder(), seen: seen}
			NewTracker(clock.RealClock{}, Limits{}).Handler(target(u, tr), "/api/v1/configmaps", &responder{}).
				ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x"+tt.query, nil))
			if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), bytes.Repeat(piece, pieces)) {
				t.Fatalf("response %d with %d bytes, want 200 with %d", rec.Code, rec.Body.Len(), pieces*len(piece))
			}
			if rec.writes < tt.minWrites || rec.writes > tt.maxWrites {
				t.Errorf("%d writes reached the client, want %d to %d", rec.writes, tt.minWrites, tt.maxWrites)
			}
		})
	}
}
