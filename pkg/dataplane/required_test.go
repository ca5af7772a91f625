// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// TestRecordingRequiredRefusals: the data plane shares the proxy's rule
// for what --recording=required refuses: a way to run a command that
// cannot be recorded gets a 403 Status, never reaches the target and is in
// the session's request log with the data plane as its way in; under
// best-effort it passes.
func TestRecordingRequiredRefusals(t *testing.T) {
	auth := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	tests := []struct {
		name, method, path, upgrade string
		policy                      recording.Mode
		refused                     string
	}{
		{name: "the kubelet's run", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/run/default/p/c?cmd=id",
			policy: recording.ModeRequired, refused: "nodes/n1/proxy/run"},
		{name: "a port-forward", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/portforward?ports=22", upgrade: "SPDY/3.1",
			policy: recording.ModeRequired, refused: "an upgraded stream to pods/p/portforward"},
		{name: "an ephemeral container", method: http.MethodPatch, path: "/api/v1/namespaces/default/pods/p/ephemeralcontainers",
			policy: recording.ModeRequired, refused: "a PATCH of pods/p/ephemeralcontainers"},
		{name: "the kubelet's healthz", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/healthz", policy: recording.ModeRequired},
		{name: "the kubelet's run, best-effort", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/run/default/p/c?cmd=id", policy: recording.ModeBestEffort},
		{name: "a port-forward, best-effort", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/portforward?ports=22", upgrade: "SPDY/3.1",
			policy: recording.ModeBestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reached atomic.Int64
			back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached.Add(1)
				if r.Header.Get("Upgrade") != "" {
					http.Error(w, "no upgrade here", http.StatusBadRequest)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
			defer back.Close()
			backURL, _ := url.Parse(back.URL)
			s, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rec := recording.New(recording.Config{Store: s, Mode: tt.policy, FlushInterval: time.Hour})
			tracker := proxy.NewTracker(clock.RealClock{}, proxy.Limits{})
			tracker.RecordWith(rec)
			sessions := trackerOpener{tracker: tracker, target: proxy.Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice",
				ExpiresAt: time.Now().Add(time.Hour), Backend: backURL, Transport: &http.Transport{}}}
			front := httptest.NewServer(Handler(context.Background(), auth, sessions))
			defer front.Close()

			req, _ := http.NewRequest(tt.method, front.URL+"/sessions/sre/fix"+tt.path, nil)
			req.Header.Set("Authorization", "Bearer alice")
			if tt.upgrade != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tt.upgrade)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.refused == "" {
				if resp.StatusCode == http.StatusForbidden || reached.Load() != 1 {
					t.Errorf("got %d %s with %d requests at the target, want it passed on", resp.StatusCode, body, reached.Load())
				}
				return
			}
			var status metav1.Status
			if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &status) != nil || status.Reason != metav1.StatusReasonForbidden ||
				!strings.Contains(status.Message, tt.refused+" cannot be recorded; this server requires recordings (--recording=required)") {
				t.Errorf("got %d %s, want a 403 Status naming %q and --recording=required", resp.StatusCode, body, tt.refused)
			}
			if reached.Load() != 0 {
				t.Errorf("a refused request reached the target")
			}
			// Run writes the request log as it ends.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			rec.Run(ctx)
			var logged []v1alpha1.RequestLogEntry
			if _, err := (recording.Reader{Store: s}).Requests(context.Background(), "sre", "fix", 0, "", func(r *v1alpha1.RequestLogEntry) error {
				logged = append(logged, *r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(logged) != 1 || logged[0].Status != http.StatusForbidden || logged[0].Way != string(proxy.WayDataPlane) ||
				!strings.Contains(logged[0].CloseReason, "--recording=required") {
				t.Errorf("request log %+v, want the refusal", logged)
			}
		})
	}
}
