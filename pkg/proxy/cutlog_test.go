// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// TestCutLogging: when a session's end or the replica's stop cuts the
// session's streams, the tracker logs one line for all of them; each
// stream's own closing line stays where nothing else holds it (a replica
// without a request log) and for a stream that ends otherwise.
func TestCutLogging(t *testing.T) {
	const streams = 3
	tests := []struct {
		name     string
		recorded bool
		// end ends the streams: through r, or by closing the clients.
		end func(r *Tracker, closeClients func())
		// cutReason is the closeReason of the tracker's line; "" for none.
		cutReason   string
		streamLines int
	}{
		{"expiry, request log kept", true, func(r *Tracker, _ func()) { r.End("s1", ErrExpired) }, ErrExpired.Error(), 0},
		{"expiry, no request log", false, func(r *Tracker, _ func()) { r.End("s1", ErrExpired) }, ErrExpired.Error(), streams},
		{"lock of the session, request log kept", true, func(r *Tracker, _ func()) { r.End("s1", &LockedError{Message: "held"}) }, "held", 0},
		{"replica stops, request log kept", true, func(r *Tracker, _ func()) { r.Stop() }, ErrStopping.Error(), 0},
		{"clients close, request log kept", true, func(_ *Tracker, closeClients func()) { closeClients() }, "", streams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logged := captureLog(t)
			r := NewTracker(clock.RealClock{}, Limits{})
			var requestLog func() []v1alpha1.RequestLogEntry
			if tt.recorded {
				requestLog = recordTo(t, r)
			}
			back := idleWatchBackend(t)
			u, err := url.Parse(back.URL)
			must(t, err)
			tr := back.Client().Transport.(*http.Transport)
			base := serveThroughProxy(t, r, target(u, tr))
			ctx, closeClients := context.WithCancel(context.Background())
			defer closeClients()
			ended := make(chan struct{}, streams)
			for range streams {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/proxy/api/v1/configmaps?watch=true", nil)
				must(t, err)
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				go func() {
					defer resp.Body.Close()
					for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
					}
					ended <- struct{}{}
				}()
			}
			for r.OpenConnections("s1") < streams {
				time.Sleep(5 * time.Millisecond)
			}
			tt.end(r, closeClients)
			for range streams {
				<-ended
			}
			if !released(r, 5*time.Second) {
				t.Fatal("the tracker still holds the streams")
			}
			var cuts, closed int
			for _, line := range logged() {
				switch {
				case strings.Contains(line, `"msg"="Session's proxied requests ended"`):
					cuts++
					for _, want := range []string{`"session"={"name"="fix" "namespace"="sre"}`, `"requests"=3`, `"closeReason"="` + tt.cutReason + `"`} {
						if !strings.Contains(line, want) {
							t.Errorf("the tracker's line lacks %s: %s", want, line)
						}
					}
				case strings.Contains(line, `"msg"="Proxied request closed"`):
					closed++
				}
			}
			if want := min(len(tt.cutReason), 1); cuts != want {
				t.Errorf("%d lines of the tracker, want %d", cuts, want)
			}
			if closed != tt.streamLines {
				t.Errorf("%d streams logged their closing, want %d", closed, tt.streamLines)
			}
			// The request log holds every stream, however it ended.
			if requestLog != nil {
				if got := requestLog(); len(got) != streams {
					t.Errorf("request log %+v, want %d streams", got, streams)
				}
			}
		})
	}
}

// captureLog sends klog's lines to a list until t ends, and returns a
// function that reads the list.
func captureLog(t *testing.T) func() []string {
	var mu sync.Mutex
	var lines []string
	klog.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// recordTo makes r keep a request log in a local store, and returns a
// function that stops the recorder, which writes the log then, and reads
// the log of target's session.
func recordTo(t *testing.T, r *Tracker) func() []v1alpha1.RequestLogEntry {
	recorder, dir, stop := runningRecorder(t)
	r.RecordWith(recorder)
	return func() []v1alpha1.RequestLogEntry {
		stop()
		local, err := store.NewLocal(dir)
		must(t, err)
		var entries []v1alpha1.RequestLogEntry
		_, err = recording.Reader{Store: local}.Requests(context.Background(), "sre", "fix", 0, "", func(e *v1alpha1.RequestLogEntry) error {
			entries = append(entries, *e)
			return nil
		})
		must(t, err)
		return entries
	}
}
