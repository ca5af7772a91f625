// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/pkg/sessionevents"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// The e2e control plane's event sink: a receiver TestSessionEvents starts
// at eventSinkAddr, with a serving certificate of its own CA, and the
// secret every event is signed with. Until it starts, and while it is
// stopped, deliveries fail and events wait in the outbox.
var (
	eventSinkAddr                 string
	eventSinkConfig               string
	eventSinkCAFile               string
	eventSinkSecretFile           string
	eventSinkCert, eventSinkKey   string
	eventSinkSecret               = []byte("e2e-hmac-secret")
	eventSinkMaxBackoff           = 2 * time.Second
	eventSinkPath                 = "/events"
	eventSinkName                 = "e2e"
	eventSinkLeaderChangeDeadline = 90 * time.Second
	eventSinkSource               = "https://e2e.clustergate.local"
)

// eventSinkSetup writes the sink's CA, certificate, secret and the
// --session-event-sinks-config of the e2e control plane into dir, and
// returns the configuration's path.
func eventSinkSetup(dir string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	eventSinkAddr = l.Addr().String()
	_ = l.Close()
	ca, err := localcluster.NewCA(dir, "event-sink-ca", false)
	if err != nil {
		return "", err
	}
	pair, err := ca.ServingCert(dir, "event-sink")
	if err != nil {
		return "", err
	}
	eventSinkCert, eventSinkKey = pair.CertFile, pair.KeyFile
	secret := filepath.Join(dir, "event-sink-hmac")
	if err := os.WriteFile(secret, eventSinkSecret, 0o600); err != nil {
		return "", err
	}
	eventSinkConfig, eventSinkCAFile, eventSinkSecretFile = filepath.Join(dir, "event-sinks.yaml"), ca.CertFile, secret
	return eventSinkConfig, os.WriteFile(eventSinkConfig, eventSinksYAML(eventSinkSource), 0o600)
}

// eventSinksYAML is the sinks' configuration of the e2e control plane,
// with the events' source.
func eventSinksYAML(source string) []byte {
	return fmt.Appendf(nil, `apiVersion: %s
kind: %s
source: %s
initialBackoff: 500ms
maxBackoff: %s
sinks:
- name: %s
  url: https://%s%s
  caFile: %s
  hmacSecretFile: %s
  format: cloudevents-structured
  timeout: 5s
`, sinks.APIVersion, sinks.Kind, source, eventSinkMaxBackoff, eventSinkName, eventSinkAddr, eventSinkPath, eventSinkCAFile, eventSinkSecretFile)
}

// eventReceiver is a CloudEvents receiver built with the SDK over HTTPS,
// which takes an event only with a valid signature of its body.
type eventReceiver struct {
	mu sync.Mutex
	// got counts the events received by id; bodies are their bodies.
	got    map[string]int
	events map[string]cloudevents.Event
	bodies []string
	// badSignatures counts requests refused for their signature.
	badSignatures int
	stop          func()
}

func startReceiver(t *testing.T, r *eventReceiver) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(eventSinkCert, eventSinkKey)
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	eventually(t, 10*time.Second, "the sink's address free", func() error {
		l, err = tls.Listen("tcp", eventSinkAddr, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		return err
	})
	verify := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, err := io.ReadAll(req.Body)
			if err != nil || !hmac.Equal([]byte(req.Header.Get(sinks.SignatureHeader)), []byte(sinks.Signature(eventSinkSecret, body))) {
				r.mu.Lock()
				r.badSignatures++
				r.mu.Unlock()
				http.Error(w, "bad signature", http.StatusUnauthorized)
				return
			}
			r.mu.Lock()
			r.bodies = append(r.bodies, string(body))
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, req)
		})
	}
	p, err := cehttp.New(cehttp.WithListener(l), cehttp.WithPath(eventSinkPath), cehttp.WithMiddleware(verify))
	if err != nil {
		t.Fatal(err)
	}
	client, err := cloudevents.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := client.StartReceiver(ctx, func(e cloudevents.Event) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if prev, ok := r.events[e.ID()]; ok && (prev.Type() != e.Type() || !bytes.Equal(prev.Data(), e.Data())) {
				t.Errorf("event %s came twice, differently:\n%s\n%s", e.ID(), prev, e)
			}
			r.got[e.ID()]++
			r.events[e.ID()] = e
		})
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
	}()
	r.stop = func() { cancel(); <-done }
	t.Cleanup(r.stop)
}

// ofSession returns the ids of the events of the session with uid, and
// whether each came once.
func (r *eventReceiver) ofSession(uid string) (ids []string, counts map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts = map[string]int{}
	for id, n := range r.got {
		if strings.HasPrefix(id, uid+".") {
			ids = append(ids, strings.TrimPrefix(id, uid+"."))
			counts[id] = n
		}
	}
	slices.Sort(ids)
	return ids, counts
}

// waitEvents waits up to a minute until the receiver has every one of want
// (ids after the session's UID) and nothing else of the session.
func (r *eventReceiver) waitEvents(t *testing.T, uid string, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	eventually(t, time.Minute, "the session's events", func() error {
		if got, _ := r.ofSession(uid); !slices.Equal(got, want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	})
}

// TestSessionEvents: a CloudEvents receiver built with the SDK, over HTTPS
// with a CA of its own and checking every body's HMAC, gets each step of a
// session once: requested, approved by bob, opened, revoked (naming erin,
// who deleted it), ended; with no credential in any. A stream relayed by
// the extra replica, which is not the leader, whose recording store fails,
// arrives as recording_failed. Then, while the receiver is down, a second
// session goes through the same steps and clustergate's leader is stopped,
// so that the extra replica takes over and stores the session's end; back
// up, the receiver gets every event, none lost. Last, the sinks'
// configuration file changes (the events' source): every replica takes it
// without a restart, and the next session's events carry the new source.
func TestSessionEvents(t *testing.T) {
	ctx := context.Background()
	// The extra replica records best-effort into a directory that is
	// replaced by a file once it runs: every write of a recording fails.
	recordings := filepath.Join(t.TempDir(), "recordings")
	replica, err := cp.StartReplica(ctx, "clustergate-events", "--recording=best-effort", "--recording-dir="+recordings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(recordings); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recordings, []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	ns := namespace(t, "events")
	grantBreakglass(t, ns, "erin", "bob")
	erin, bob := userKubeconfig(t, "erin", "sre"), userKubeconfig(t, "bob")
	_, admin := clients(t)
	r := &eventReceiver{got: map[string]int{}, events: map[string]cloudevents.Event{}}
	startReceiver(t, r)

	// open asks for a session as erin, bob approves it, and it gets Ready;
	// it returns the session's UID.
	open := func(name string) string {
		apply(t, erin, clusterSessionManifest(name, "10m", approvalGroup)+"  reason: INC-9 queue stuck\n", "-n", ns)
		s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decide(clientOf(t, bob), ns, name, v1alpha1.ApprovalApproved, "INC-9 confirmed"); err != nil {
			t.Fatal(err)
		}
		waitSessionReady(t, admin, ns, name)
		return string(s.UID)
	}
	steps := []string{"requested.0", "approved.0.0", "opened", "revoked", "ended"}

	uid := open("first")
	kubectlAs(t, erin, "-n", ns, "delete", "session", "first", "--wait=true")
	r.waitEvents(t, uid, steps...)
	_, counts := r.ofSession(uid)
	for id, n := range counts {
		if n != 1 {
			t.Errorf("event %s came %d times", id, n)
		}
	}
	r.mu.Lock()
	requested, revoked, bodies, bad := r.events[uid+".requested.0"], r.events[uid+".revoked"], slices.Clone(r.bodies), r.badSignatures
	r.mu.Unlock()
	if bad > 0 {
		t.Errorf("%d requests had a bad signature", bad)
	}
	var data sessionevents.Data
	if err := requested.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	if requested.Type() != string(sessionevents.Requested) || requested.Source() != eventSinkSource ||
		requested.Subject() != "namespaces/"+ns+"/sessions/first" || data.Request == nil ||
		data.Request.ApproveCommand != "kubectl session approve -n "+ns+" first" || data.Justification != "INC-9 queue stuck" {
		t.Errorf("requested event: %s", requested)
	}
	var revokedData sessionevents.Data
	if err := revoked.DataAs(&revokedData); err != nil {
		t.Fatal(err)
	}
	if revokedData.End == nil || revokedData.End.RevokedBy != "erin" || !strings.Contains(revokedData.Message, "by erin") {
		t.Errorf("revoked event names no revoker: %s", revoked)
	}

	// A stream through the replica that cannot record: it runs
	// (best-effort), and its failed recording arrives once.
	standInPod(t, "events-unrecorded")
	sreSession(t, ns, "unrecorded")
	recorded, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "unrecorded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := "typed while the recording fails\n"
	out, err := cp.Kubectl(ctx, dataPlaneKubeconfigAt(t, replica.DataPlaneURL, ns, "unrecorded", "sre"), []byte(in),
		"-n", "default", "exec", "-i", "events-unrecorded", "--", "cat")
	if err != nil || string(out) != in {
		t.Fatalf("exec -i cat through the replica whose recordings fail: %q %v", out, err)
	}
	var failedID string
	eventually(t, time.Minute, "the recording_failed event", func() error {
		ids, _ := r.ofSession(string(recorded.UID))
		for _, id := range ids {
			if strings.HasPrefix(id, "recording_failed.") {
				failedID = string(recorded.UID) + "." + id
				return nil
			}
		}
		return fmt.Errorf("events %v", ids)
	})
	r.mu.Lock()
	failed, failedCount := r.events[failedID], r.got[failedID]
	r.mu.Unlock()
	var failedData sessionevents.Data
	if err := failed.DataAs(&failedData); err != nil {
		t.Fatal(err)
	}
	if failed.Type() != string(sessionevents.RecordingFailed) || failedCount != 1 || failedData.Recording == nil ||
		failedData.Recording.Outcome != sessionevents.StreamUnrecorded || failedData.Recording.Way != "data_plane" ||
		failedData.Recording.Replica == "" || failedData.AccessLevel != "admin" {
		t.Errorf("recording_failed event, received %d times: %s", failedCount, failed)
	}
	for _, body := range bodies {
		for _, secret := range []string{"BEGIN", "PRIVATE KEY", "client-certificate", "token", `"kubeconfig":`, "https://127.0.0.1:"} {
			if strings.Contains(body, secret) {
				t.Errorf("an event carries %q: %s", secret, body)
			}
		}
	}

	// The receiver goes; a session goes through its life meanwhile, and
	// the leader stops halfway: the extra replica takes over.
	r.stop()
	uid = open("second")
	replicaAdmin, restart := takeLeaderDown(t, replica, cp.StopComponent)
	if err := replicaAdmin.ClustergateV1alpha1().Sessions(ns).Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The replica takes the Lease once the stopped leader released it,
	// and cleans the session up.
	waitGone(t, replicaAdmin, ns, "second", eventSinkLeaderChangeDeadline)
	restart()
	startReceiver(t, r)
	r.waitEvents(t, uid, steps...)

	// The configuration changes under the running replicas.
	const reloadedSource = "https://reloaded.e2e.clustergate.local"
	writeSinksConfig(t, reloadedSource)
	defer writeSinksConfig(t, eventSinkSource)
	for _, url := range []string{cp.ClustergateURL, replica.URL} {
		eventually(t, 3*sinks.ReloadInterval, "the configuration reloaded at "+url, func() error {
			if n, _ := metricValue(t, url, `clustergate_session_event_sinks_config_reloads_total{result="success"}`); n < 1 {
				return fmt.Errorf("%v successful reloads", n)
			}
			return nil
		})
	}
	uid = open("third")
	r.waitEvents(t, uid, "requested.0", "approved.0.0", "opened")
	r.mu.Lock()
	third := r.events[uid+".requested.0"]
	r.mu.Unlock()
	if third.Source() != reloadedSource {
		t.Errorf("an event after the configuration changed has source %q, want %q", third.Source(), reloadedSource)
	}
}

// takeLeaderDown ends clustergate's first replica, the leader, with end
// (StopComponent, or KillComponent for a crash) so that replica takes over,
// and returns an admin client of replica and a function that starts the
// first replica again; if the test does not, its cleanup does.
func takeLeaderDown(t *testing.T, replica localcluster.Replica, end func(string) error) (versioned.Interface, func()) {
	t.Helper()
	if err := end("clustergate"); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = cp.StartComponent(context.Background(), "clustergate")
		}
	})
	replicaAdmin, err := versioned.NewForConfig(cp.FrontProxyConfig(replica.URL, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	return replicaAdmin, func() {
		t.Helper()
		if err := cp.StartComponent(context.Background(), "clustergate"); err != nil {
			t.Fatal(err)
		}
		restarted = true
	}
}

// writeSinksConfig replaces the e2e control plane's sinks configuration,
// whole at once as a ConfigMap's volume would, with one of the events'
// source.
func writeSinksConfig(t *testing.T, source string) {
	t.Helper()
	next := eventSinkConfig + ".next"
	if err := os.WriteFile(next, eventSinksYAML(source), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, eventSinkConfig); err != nil {
		t.Fatal(err)
	}
}
