// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

func TestProxyEndsAtExpiry(t *testing.T) {
	_, _, session, s := proxySession(t, "proxy-expiry", "brief", "15s")
	// kubectl discovers the target's API before anything else and, for
	// discovery, client-go drops the Status a server answers with. A user
	// has used the session before it expired, so kubectl has its discovery
	// cached; so does the test, in a cache of its own.
	cache := []string{"--cache-dir", t.TempDir()}
	kubectlAs(t, session, append(cache, "get", "namespaces")...)
	ended := watchUntilEnd(t, session)
	select {
	case last := <-ended:
		late := time.Since(s.Status.ExpiresAt.Time)
		if late > time.Second || late < -time.Second {
			t.Errorf("the watch ended %s after expiresAt, want within 1s", late)
		}
		if !strings.Contains(last, "expired") {
			t.Errorf("last line of the watch %q does not say the session expired", last)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch outlived the session")
	}
	// Once expired, the proxy answers 410 until the session controller
	// deletes the session, 410 while its finalizers run, 404 after.
	msg := kubectlErr(t, session, "", append(cache, "get", "namespaces")...)
	if !strings.Contains(msg, "session proxy-expiry/brief: the session expired") &&
		!strings.Contains(msg, "session proxy-expiry/brief is being deleted") &&
		!strings.Contains(msg, `sessions.clustergate.dev "brief" not found`) {
		t.Errorf("after expiry: %s", msg)
	}
}

func TestProxyClientDisconnectClosesUpstream(t *testing.T) {
	_, _, session, _ := proxySession(t, "proxy-disconnect", "short-lived-client", "1h")
	before := shootWatches(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cp.Kubectl(ctx, session, nil, "-n", "default", "get", "configmaps", "-w")
	}()
	eventually(t, 20*time.Second, "watch open on the target", func() error {
		if n := shootWatches(t); n <= before {
			return fmt.Errorf("%d watches", n)
		}
		return nil
	})
	cancel()
	<-done
	eventually(t, 20*time.Second, "upstream watch closed", func() error {
		if n := shootWatches(t); n > before {
			return fmt.Errorf("%d watches still open (%d before)", n, before)
		}
		return nil
	})
}

// watchUntilEnd starts a raw watch through the session and returns a
// channel that receives the watch's last line when the stream ends.
func watchUntilEnd(t *testing.T, session string) <-chan string {
	t.Helper()
	return e2echeck.WatchUntilEnd(t, restConfig(t, session))
}

// shootWatches is the number of WATCH requests the shoot kube-apiserver is
// serving.
func shootWatches(t *testing.T) int {
	t.Helper()
	metrics := kubectlAs(t, cp.ShootKubeconfig, "get", "--raw", "/metrics")
	total := 0
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `verb="WATCH"`) {
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			total += int(v)
		}
	}
	return total
}

// websocketWatch opens a WebSocket watch of ConfigMaps in the target's
// default namespace through the session.
func websocketWatch(t *testing.T, session string) *websocket.Conn {
	t.Helper()
	cfg := restConfig(t, session)
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(cfg.Host, "https://", "wss://", 1) + "/api/v1/namespaces/default/configmaps?watch=1"
	dialer := websocket.Dialer{TLSClientConfig: tlsConfig, HandshakeTimeout: 10 * time.Second}
	// The target's websocket handshake wants an Origin.
	conn, resp, err := dialer.Dial(url, http.Header{"Origin": {"http://localhost"}})
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = resp.Status + " " + string(b)
		}
		t.Fatalf("websocket: %v %s", err, body)
	}
	return conn
}

// openProxied is clustergate_proxy_open_requests of the replica at url.
func openProxied(t *testing.T, url string) int {
	t.Helper()
	n, ok := metricValue(t, url, "clustergate_proxy_open_requests")
	if !ok {
		t.Fatalf("%s/metrics has no clustergate_proxy_open_requests", url)
	}
	return int(n)
}

// metricValue is the value of one series of the replica at url's /metrics,
// named as the exposition writes it (name and labels), and whether the
// replica has it.
func metricValue(t *testing.T, url, series string) (float64, bool) {
	t.Helper()
	client, err := rest.HTTPClientFor(cp.FrontProxyConfig(url, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s/metrics: %s", url, resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if f := strings.Fields(lines.Text()); len(f) == 2 && f[0] == series {
			n, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return n, true
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return 0, false
}

// watchOnEveryReplica opens WebSocket watches through the session (the
// whole aggregated path) until each replica holds at least one, and returns
// channels that receive the moment each watch ended.
func watchOnEveryReplica(t *testing.T, session string, replicas []string) []<-chan time.Time {
	t.Helper()
	before := make([]int, len(replicas))
	for i, url := range replicas {
		before[i] = openProxied(t, url)
	}
	var ends []<-chan time.Time
	for range 10 {
		conn := websocketWatch(t, session)
		end := make(chan time.Time, 1)
		go func() {
			defer conn.Close()
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					end <- time.Now()
					return
				}
			}
		}()
		ends = append(ends, end)
		// The replica counted the stream before it answered the upgrade.
		everywhere := true
		for i, url := range replicas {
			everywhere = everywhere && openProxied(t, url) > before[i]
		}
		if everywhere {
			t.Logf("%d WebSocket watches through the APIService reached both replicas", len(ends))
			return ends
		}
	}
	t.Fatalf("%d watches through the APIService, and a replica holds none", len(ends))
	return nil
}

// TestProxyEndsOnEveryReplica runs two replicas behind the APIService. The
// aggregator dials a connection of its own for each upgraded request, which
// the Service's balancer hands to the replicas in turn, so WebSocket
// watches through the whole path land on both.
func TestProxyEndsOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	replica, err := cp.StartReplica(ctx, "clustergate-2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	replicas := []string{cp.ClustergateURL, replica.URL}
	deletedNS, _, deleted, _ := proxySession(t, "replicas-deleted", "deleted", "1h")
	deletedEnds := watchOnEveryReplica(t, deleted, replicas)
	// Last, so that its TTL need only cover its own way to Ready and its
	// watches: had it expired meanwhile, the replicas' counts would drop
	// and hide where the watches landed. In a loaded CI run Ready alone
	// took most of a 20 s TTL, so the TTL is 40 s and what is left of it
	// is checked first.
	_, _, expiring, s := proxySession(t, "replicas", "expiring", "40s")
	if left := time.Until(s.Status.ExpiresAt.Time); left < 15*time.Second {
		t.Fatalf("session %s got Ready with %s of its TTL left, too little to open its watches", expiring, left.Round(time.Millisecond))
	}
	expiringEnds := watchOnEveryReplica(t, expiring, replicas)

	_, client := clients(t)
	deletedAt := time.Now()
	if err := client.ClustergateV1alpha1().Sessions(deletedNS).Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, end := range deletedEnds {
		select {
		case at := <-end:
			took := at.Sub(deletedAt)
			t.Logf("watch %d of the deleted session ended %s after the delete", i+1, took)
			if took > time.Second {
				t.Errorf("watch %d of the deleted session ended %s after the delete, want within 1s", i+1, took)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch %d of the deleted session is still open", i+1)
		}
	}
	for i, end := range expiringEnds {
		select {
		case at := <-end:
			late := at.Sub(s.Status.ExpiresAt.Time)
			t.Logf("watch %d of the expiring session ended %s after expiresAt", i+1, late)
			if late > time.Second || late < -time.Second {
				t.Errorf("watch %d ended %s after expiresAt, want within 1s", i+1, late)
			}
		case <-time.After(time.Until(s.Status.ExpiresAt.Add(10 * time.Second))):
			t.Fatalf("watch %d outlived the session", i+1)
		}
	}
}
