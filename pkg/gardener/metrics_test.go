// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1alpha1 "github.com/gardener/gardener/pkg/apis/authentication/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/testutil"
)

// TestRequestMetrics checks that every request to Gardener, kubeconfig or
// probe, counts once under its operation and result and is timed.
func TestRequestMetrics(t *testing.T) {
	// answer is the status code the fake Gardener gives the next request.
	answer := http.StatusOK
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/core.gardener.cloud/v1beta1/projects/p" {
			// The project's namespace is kept after the first answer.
			_, _ = w.Write([]byte(`{"kind":"Project","apiVersion":"core.gardener.cloud/v1beta1","spec":{"namespace":"garden-p"}}`))
			return
		}
		if answer != http.StatusOK {
			w.WriteHeader(answer)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: int32(answer), Reason: metav1.StatusReasonForbidden})
			return
		}
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"kind":"ShootList","apiVersion":"core.gardener.cloud/v1beta1","items":[]}`))
			return
		}
		_ = json.NewEncoder(w).Encode(authenticationv1alpha1.AdminKubeconfigRequest{Status: authenticationv1alpha1.AdminKubeconfigRequestStatus{
			Kubeconfig: []byte(kubeconfigYAML), ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}})
	}))
	defer srv.Close()
	client, err := NewClientForConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "p")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name          string
		code          int
		call          func(context.Context) error
		operation     string
		result        string
		wantSucceeded bool
	}{
		{name: "admin kubeconfig", code: http.StatusOK, operation: operationAdmin, result: "Success", wantSucceeded: true,
			call: func(ctx context.Context) error {
				_, err := client.RequestKubeconfig(ctx, Shoot{Project: "p", Name: "c"}, time.Hour)
				return err
			}},
		{name: "admin kubeconfig refused", code: http.StatusForbidden, operation: operationAdmin, result: "Forbidden",
			call: func(ctx context.Context) error {
				_, err := client.RequestKubeconfig(ctx, Shoot{Project: "p", Name: "c"}, time.Hour)
				return err
			}},
		{name: "probe answered", code: http.StatusOK, operation: operationProbe, result: "Success", wantSucceeded: true, call: client.probe},
		{name: "probe refused", code: http.StatusForbidden, operation: operationProbe, result: "Forbidden", call: client.probe},
		{name: "probe unanswered", code: http.StatusServiceUnavailable, operation: operationProbe, result: "GardenerUnavailable", call: client.probe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer = tt.code
			before, err := testutil.GetCounterMetricValue(requests.WithLabelValues(tt.operation, "p", tt.result))
			if err != nil {
				t.Fatal(err)
			}
			timed, err := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(tt.operation))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.call(context.Background()); (err == nil) != tt.wantSucceeded {
				t.Fatalf("error = %v, want success %v", err, tt.wantSucceeded)
			}
			if got, _ := testutil.GetCounterMetricValue(requests.WithLabelValues(tt.operation, "p", tt.result)); got != before+1 {
				t.Errorf("requests_total{operation=%q,result=%q} = %v, want %v", tt.operation, tt.result, got, before+1)
			}
			if got, _ := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(tt.operation)); got != timed+1 {
				t.Errorf("request_duration_seconds_count{operation=%q} = %v, want %v", tt.operation, got, timed+1)
			}
		})
	}
}

// TestProbeCanceledIsNotCounted: a probe cut off by the server stopping is
// no answer from Gardener and must not count as one.
func TestProbeCanceledIsNotCounted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	}))
	defer srv.Close()
	client, err := NewClientForConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "p")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(operationProbe))
	if err := client.probe(ctx); err == nil {
		t.Fatal("a canceled probe succeeded")
	}
	if got, _ := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(operationProbe)); got != before {
		t.Errorf("a canceled probe was recorded: count %v, want %v", got, before)
	}
}
