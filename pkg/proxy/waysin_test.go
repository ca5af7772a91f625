// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// outcome is what the proxy does with a way in.
type outcome string

const (
	// recorded: the request reaches the target and its stream is recorded.
	recorded outcome = "recorded"
	// refused: a 403 Status; the request never reaches the target.
	refused outcome = "refused"
	// allowed: the request reaches the target, in the request log only.
	allowed outcome = "allowed"
)

// waysIn are the ways to run a command in a container, or to reach one
// that runs, and the reads beside them, with what --recording=required
// does with each. Under best-effort, every one reaches the target.
var waysIn = []struct {
	name, method, path, upgrade string
	required                    outcome
	// way is what the refusal names.
	way string
}{
	{name: "pod exec", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true", upgrade: "websocket", required: recorded},
	{name: "pod attach over SPDY", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/attach?stdin=true", upgrade: "SPDY/3.1", required: recorded},
	{name: "kubelet exec through the node's proxy", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/exec/default/p/c?command=sh", upgrade: "websocket", required: recorded},
	{name: "kubelet attach with the pod's UID", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/attach/default/p/0d1c/c?stdin=true", upgrade: "SPDY/3.1", required: recorded},
	{name: "kubelet exec, deprecated proxy path", method: http.MethodGet, path: "/api/v1/proxy/nodes/n1/exec/default/p/c?command=sh", upgrade: "websocket", required: recorded},
	{name: "kubelet run", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/run/default/p/c?cmd=id", required: refused, way: "nodes/n1/proxy/run"},
	{name: "kubelet run, deprecated proxy path", method: http.MethodPost, path: "/api/v1/proxy/nodes/n1/run/default/p/c?cmd=id", required: refused, way: "nodes/n1/proxy/run"},
	{name: "kubelet exec path without a container", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/exec/default/p?command=sh", upgrade: "websocket", required: refused, way: "nodes/n1/proxy/exec"},
	{name: "kubelet port-forward", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/portForward/default/p", upgrade: "SPDY/3.1", required: refused, way: "nodes/n1/proxy/portForward"},
	{name: "kubelet checkpoint", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/checkpoint/default/p/c", required: refused, way: "nodes/n1/proxy/checkpoint"},
	{name: "kubelet log level", method: http.MethodPut, path: "/api/v1/nodes/n1/proxy/debug/flags/v", required: refused, way: "nodes/n1/proxy/debug"},
	{name: "kubelet profile", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/debug/pprof/profile", required: refused, way: "nodes/n1/proxy/debug"},
	{name: "kubelet root", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/", required: refused, way: "nodes/n1/proxy/"},
	{name: "kubelet read as a POST", method: http.MethodPost, path: "/api/v1/nodes/n1/proxy/pods", required: refused, way: "nodes/n1/proxy/pods"},
	{name: "another port of the node", method: http.MethodGet, path: "/api/v1/nodes/n1:8080/proxy/healthz", required: refused, way: "nodes/n1:8080/proxy/healthz"},
	{name: "kubelet healthz", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/healthz", required: allowed},
	{name: "kubelet metrics", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/metrics/cadvisor", required: allowed},
	{name: "kubelet stats", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/stats/summary", required: allowed},
	{name: "kubelet pods", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/pods", required: allowed},
	{name: "kubelet configz", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/configz", required: allowed},
	{name: "kubelet container logs", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/containerLogs/default/p/c", required: allowed},
	{name: "node logs", method: http.MethodGet, path: "/api/v1/nodes/n1/proxy/logs/syslog", required: allowed},
	{name: "pod port-forward", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/portforward?ports=22", upgrade: "SPDY/3.1", required: refused, way: "an upgraded stream to pods/p/portforward"},
	{name: "pod port-forward over WebSocket", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/portforward?ports=22", upgrade: "websocket", required: refused, way: "an upgraded stream to pods/p/portforward"},
	{name: "WebSocket through a pod's proxy", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/proxy/terminals/websocket/1", upgrade: "websocket", required: refused, way: "an upgraded stream to pods/p/proxy"},
	{name: "pod's port through its proxy", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p:8888/proxy/exec", upgrade: "websocket", required: refused, way: "an upgraded stream to pods/p:8888/proxy"},
	{name: "WebSocket through a service's proxy", method: http.MethodGet, path: "/api/v1/namespaces/default/services/https:jupyter:443/proxy/ws", upgrade: "websocket", required: refused, way: "an upgraded stream to services/https:jupyter:443/proxy"},
	{name: "WebSocket through the deprecated proxy path", method: http.MethodGet, path: "/api/v1/proxy/namespaces/default/pods/p/ws", upgrade: "websocket", required: refused, way: "an upgraded stream to pods/p/proxy"},
	{name: "an aggregated API's console", method: http.MethodGet, path: "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/vm/console", upgrade: "websocket", required: refused, way: "an upgraded stream to virtualmachineinstances/vm/console"},
	{name: "an upgrade outside the API", method: http.MethodGet, path: "/shell", upgrade: "websocket", required: refused, way: "an upgraded stream to /shell"},
	{name: "ephemeral container added", method: http.MethodPatch, path: "/api/v1/namespaces/default/pods/p/ephemeralcontainers", required: refused, way: "a PATCH of pods/p/ephemeralcontainers"},
	{name: "ephemeral containers replaced", method: http.MethodPut, path: "/api/v1/namespaces/default/pods/p/ephemeralcontainers", required: refused, way: "a PUT of pods/p/ephemeralcontainers"},
	{name: "ephemeral containers read", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/ephemeralcontainers", required: allowed},
	{name: "plain request through a pod's proxy", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/proxy/api/run", required: allowed},
	{name: "plain request through a service's proxy", method: http.MethodGet, path: "/api/v1/namespaces/default/services/web/proxy/", required: allowed},
	{name: "watch over WebSocket", method: http.MethodGet, path: "/api/v1/namespaces/default/pods?watch=true", upgrade: "websocket", required: allowed},
	{name: "a subresource behind the watch prefix", method: http.MethodGet, path: "/api/v1/watch/namespaces/default/pods/p/portforward", upgrade: "websocket", required: refused, way: "an upgraded stream to pods/p/portforward"},
	{name: "watch prefix over WebSocket", method: http.MethodGet, path: "/api/v1/watch/namespaces/default/pods/p", upgrade: "websocket", required: allowed},
	{name: "pod log over WebSocket", method: http.MethodGet, path: "/api/v1/namespaces/default/pods/p/log?follow=true", upgrade: "websocket", required: allowed},
	{name: "a pod created", method: http.MethodPost, path: "/api/v1/namespaces/default/pods", required: allowed},
	{name: "a list", method: http.MethodGet, path: "/api/v1/namespaces/default/pods", required: allowed},
}

// countingBackend is a target that counts the requests that reach it and
// answers upgrades with 400 and the rest with 200.
func countingBackend(t *testing.T) (Target, *atomic.Int64) {
	t.Helper()
	var reached atomic.Int64
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no upgrade here", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	return target(u, tr), &reached
}

// finishedStreams lists the streams recorded in s once each has its
// manifest, which its recording writes after the stream ended; with one
// set, it waits up to 5 s for one stream to be recorded.
func finishedStreams(t *testing.T, s store.Store, one bool) []v1alpha1.SessionRecording {
	t.Helper()
	var streams []v1alpha1.SessionRecording
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		streams, err = recording.Reader{Store: s}.Streams(context.Background(), "sre", "fix")
		must(t, err)
		finished := !one || len(streams) > 0
		for _, stream := range streams {
			finished = finished && stream.Manifest != nil
		}
		if finished {
			break
		}
	}
	return streams
}

// TestRecordingRequiredWaysIn: under --recording=required every way in is
// recorded, refused with a 403 Status naming it and the flag before it
// reaches the target, or allowed when it runs nothing; under best-effort
// nothing is refused, and the kubelet's exec and attach are recorded too.
func TestRecordingRequiredWaysIn(t *testing.T) {
	for _, policy := range []recording.Mode{recording.ModeRequired, recording.ModeBestEffort} {
		for _, tt := range waysIn {
			t.Run(string(policy)+"/"+tt.name, func(t *testing.T) {
				want := tt.required
				if policy != recording.ModeRequired && want == refused {
					want = allowed
				}
				tgt, reached := countingBackend(t)
				s := newFailingStore(t, false)
				base := strings.Replace(recordingProxy(t, recording.New(recording.Config{Store: s, Mode: policy}), tgt), "ws://", "http://", 1)
				req, err := http.NewRequest(tt.method, base+"/proxy"+tt.path, nil)
				must(t, err)
				if tt.upgrade != "" {
					req.Header.Set("Connection", "Upgrade")
					req.Header.Set("Upgrade", tt.upgrade)
				}
				refusals := counter(t, refusedRequests.WithLabelValues("unrecordable"))
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()

				streams := finishedStreams(t, s, want == recorded)
				counted := counter(t, refusedRequests.WithLabelValues("unrecordable")) - refusals
				switch want {
				case refused:
					var status metav1.Status
					if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &status) != nil || status.Reason != metav1.StatusReasonForbidden ||
						!strings.Contains(status.Message, "session sre/fix: "+tt.way+" cannot be recorded; this server requires recordings (--recording=required)") {
						t.Errorf("got %d %s, want a 403 Status naming %q and --recording=required", resp.StatusCode, body, tt.way)
					}
					if reached.Load() != 0 {
						t.Errorf("a refused request reached the target")
					}
					if counted != 1 {
						t.Errorf("refused_requests_total{reason=\"unrecordable\"} went up by %v, want 1", counted)
					}
				case recorded, allowed:
					if reached.Load() != 1 || resp.StatusCode == http.StatusForbidden {
						t.Errorf("got %d %s after %d requests reached the target, want it passed on once", resp.StatusCode, body, reached.Load())
					}
					if counted != 0 {
						t.Errorf("refused_requests_total{reason=\"unrecordable\"} went up by %v", counted)
					}
					if recordedStreams := len(streams); (want == recorded) != (recordedStreams == 1) {
						t.Errorf("%d streams recorded, want %s", recordedStreams, want)
					}
				}
			})
		}
	}
}

// TestKubeletExecRecorded: an exec on the kubelet through its node's proxy
// is recorded like a pod's exec, with the node, pod and container its path
// names.
func TestKubeletExecRecorded(t *testing.T) {
	s := newFailingStore(t, false)
	keys := manifestKeys(t)
	base := recordingProxy(t, recording.New(recording.Config{Store: s, Mode: recording.ModeRequired, Keys: keys}), echoExecBackend(t))
	dialer := websocket.Dialer{Subprotocols: []string{"v5.channel.k8s.io"}}
	conn, _, err := dialer.Dial(base+"/proxy/api/v1/nodes/n1/proxy/exec/default/p/c?command=cat&stdin=true&stdout=true", nil)
	must(t, err)
	must(t, conn.WriteMessage(websocket.BinaryMessage, []byte("\x00typed on the node")))
	if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "\x00typed on the node" {
		t.Fatalf("echo: %q %v", msg, err)
	}
	conn.Close()

	reader := recording.Reader{Store: s, Keys: keys}
	streams := finishedStreams(t, s, true)
	if len(streams) != 1 || streams[0].Manifest == nil {
		t.Fatalf("recorded %+v, want one finished stream", streams)
	}
	info := streams[0].RecordingInfo
	if info.Subresource != "exec" || info.Node != "n1" || info.PodNamespace != "default" || info.Pod != "p" || info.Container != "c" ||
		len(info.Command) != 1 || info.Command[0] != "cat" || !info.Stdin {
		t.Errorf("recorded as %+v", info)
	}
	opened, err := reader.OpenCast(context.Background(), "sre", "fix", info.Stream, false)
	must(t, err)
	var cast bytes.Buffer
	must(t, opened.Write(context.Background(), &cast))
	if !strings.Contains(cast.String(), `"i", "typed on the node"`) || !strings.Contains(cast.String(), `"node":"n1"`) {
		t.Errorf("cast %s", cast.String())
	}
}
