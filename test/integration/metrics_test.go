// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestHealthAndMetrics(t *testing.T) {
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/metrics"} {
		if err := client.Get().AbsPath(path).Do(context.Background()).Error(); err != nil {
			t.Errorf("GET %s: %v", path, err)
		}
	}
}

// TestObjectMetrics: the server's /metrics counts live sessions from its
// informer, as they are created and deleted.
func TestObjectMetrics(t *testing.T) {
	ctx := context.Background()
	// Standalone, no controller writes conditions: the sessions stay not Ready.
	const series = `clustergate_sessions{access_level="admin",ready="false",target_kind="shoot"}`
	before := metricValue(t, series)
	sessions := clientset(t).ClustergateV1alpha1().Sessions("object-metrics")
	for _, name := range []string{"one", "two"} {
		s := newSession(name)
		s.Spec.AccessLevel.Group = "admin"
		if _, err := sessions.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, series, before+2)
	if err := sessions.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, series, before+1)
	// A session without conditions is not Ready since its creation.
	if v := metricValue(t, `clustergate_session_oldest_not_ready_timestamp_seconds{reason="Pending",target_kind="shoot"}`); v <= 0 || v > float64(time.Now().Unix()) {
		t.Errorf("oldest not Ready since %v, want a time in the past", v)
	}
	// With no GardenerClusterKubeconfigs, none is overdue.
	if v := metricValue(t, "clustergate_kubeconfigs_rotation_overdue"); v != 0 {
		t.Errorf("clustergate_kubeconfigs_rotation_overdue = %v, want 0", v)
	}
}

// metricValue returns the value of one series of the server's /metrics, 0
// when it is absent.
func metricValue(t *testing.T, series string) float64 {
	t.Helper()
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Get().AbsPath("/metrics").Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if value, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// waitMetric waits until a series of /metrics has the value want.
func waitMetric(t *testing.T, series string, want float64) {
	t.Helper()
	var got float64
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = metricValue(t, series)
		return got == want, nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("%s = %v, want %v", series, got, want))
	}
}
