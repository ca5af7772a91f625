// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestProxyStreamsEndWhenReplicaStops: a replica told to stop ends the
// streams it proxies with a final event saying so, instead of holding its
// shutdown open until the request timeout, and exits soon after.
func TestProxyStreamsEndWhenReplicaStops(t *testing.T) {
	ctx := context.Background()
	replica, err := cp.StartReplica(ctx, "clustergate-stop")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	_, _, _, s := proxySession(t, "proxy-stop", "stop", "1h")
	client, err := rest.HTTPClientFor(cp.FrontProxyConfig(replica.URL, "alice", "sre", "system:authenticated"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, replica.URL+s.Status.Endpoint+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch through the replica: %s", resp.Status)
	}
	events := make(chan string, 10)
	go func() {
		defer close(events)
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			events <- lines.Text()
		}
	}()

	stopping := time.Now()
	if err := cp.StopComponent(replica.Name); err != nil {
		t.Fatal(err)
	}
	// StopComponent kills a replica that has not exited 15 s after SIGTERM.
	if took := time.Since(stopping); took > 10*time.Second {
		t.Errorf("the replica exited %s after SIGTERM, want within 10 s", took.Round(time.Millisecond))
	} else {
		t.Logf("the replica exited %s after SIGTERM", took.Round(time.Millisecond))
	}
	var last string
	for event := range events {
		last = event
	}
	if !strings.Contains(last, `"type":"ERROR"`) || !strings.Contains(last, "replica is stopping") {
		t.Errorf("last event of the watch: %q, want an ERROR saying that the replica is stopping", last)
	}
}
