// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestVerbClass(t *testing.T) {
	tests := []struct {
		method, path, query string
		upgrade             bool
		want                string
	}{
		{method: "GET", path: "/api/v1/namespaces/a/pods", want: verbClassRead},
		{method: "HEAD", path: "/api", want: verbClassRead},
		{method: "OPTIONS", path: "/apis", want: verbClassRead},
		{method: "GET", path: "/api/v1/pods", query: "watch=true", want: verbClassWatch},
		{method: "GET", path: "/api/v1/namespaces/a/pods/p/log", query: "follow=true", want: verbClassWatch},
		{method: "GET", path: "/api/v1/namespaces/a/pods/p/log", want: verbClassRead},
		{method: "POST", path: "/api/v1/namespaces/a/pods", want: verbClassWrite},
		{method: "PATCH", path: "/api/v1/namespaces/a/pods/p", want: verbClassWrite},
		{method: "DELETE", path: "/api/v1/namespaces/a/pods/p", want: verbClassWrite},
		{method: "GET", path: "/api/v1/namespaces/a/pods/p/exec", query: "command=sh", upgrade: true, want: verbClassStream},
		{method: "POST", path: "/api/v1/namespaces/a/pods/p/portforward", upgrade: true, want: verbClassStream},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+"?"+tt.query, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/proxy"+tt.path+"?"+tt.query, nil)
			if tt.upgrade {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "websocket")
			}
			if got := verbClass(req, LongRunning(req, tt.path)); got != tt.want {
				t.Errorf("verbClass = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHandlerObservesDuration: a proxied request is observed once, under its
// verb class, with the time it took on the tracker's clock.
func TestHandlerObservesDuration(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		// The target takes its time.
		clk.Step(1500 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	})
	r := NewTracker(clk, Limits{})
	base := serveThroughProxy(t, r, target(u, tr))

	observer := requestDuration.WithLabelValues(verbClassWrite, string(WayAggregated))
	count, _ := testutil.GetHistogramMetricCount(observer)
	sum, _ := testutil.GetHistogramMetricValue(observer)
	resp, err := http.Post(base+"/proxy/api/v1/namespaces/a/configmaps", "application/json", nil)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The handler has returned once the tracker released the connection.
	if !released(r, 5*time.Second) {
		t.Fatal("the connection was never released")
	}
	gotCount, _ := testutil.GetHistogramMetricCount(observer)
	gotSum, _ := testutil.GetHistogramMetricValue(observer)
	if gotCount != count+1 || gotSum-sum != 1.5 {
		t.Errorf("request_duration_seconds{verb_class=write}: %d more observations summing to %vs, want 1 of 1.5s", gotCount-count, gotSum-sum)
	}
}
