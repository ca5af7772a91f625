// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/recording"
)

// dataPlaneKubeconfig writes a kubeconfig that reaches session ns/name
// through the data plane with a token of the service account ns/account,
// fetched by the exec plugin users run, and returns its path.
func dataPlaneKubeconfig(t *testing.T, ns, name, account string) string {
	t.Helper()
	return dataPlaneKubeconfigAt(t, cp.DataPlaneURL, ns, name, account)
}

// dataPlaneKubeconfigAt is dataPlaneKubeconfig for the data plane at url,
// such as a further replica's.
func dataPlaneKubeconfigAt(t *testing.T, url, ns, name, account string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data-plane.kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, args: [%q, %q, %q, %q], interactiveMode: Never}}}]
contexts: [{name: c, context: {cluster: s, user: u}}]
current-context: c
`, url+"/sessions/"+ns+"/"+name, cp.DataPlaneCAFile, cp.TokenExecPlugin, cp.AdminKubeconfig, ns, account, localcluster.DataPlaneAudience)
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sreSession creates the service account ns/sre and an admin session
// ns/name it owns through the data plane, and waits until it is Ready.
func sreSession(t *testing.T, ns, name string) {
	t.Helper()
	_, client := clients(t)
	kubectl(t, "-n", ns, "create", "serviceaccount", "sre")
	owner := localcluster.DataPlaneUserPrefix + "system:serviceaccount:" + ns + ":sre"
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-target-admin", "--clusterrole=clustergate:target-admin", "--user="+owner)
	apply(t, cp.AdminKubeconfig, strings.Replace(sessionManifest(name, owner), "group: viewer", "group: admin", 1), "-n", ns)
	waitSessionReady(t, client, ns, name)
}

// TestRecording types into kubectl exec -i through both ways in, deletes
// the sessions, and has an auditor list, read the request log of and
// replay what was typed and what came back; the owner may read none of it.
func TestRecording(t *testing.T) {
	ctx := context.Background()
	ns, alice, aliceSession, _ := proxySessionWith(t, "recording", "recorded", "1h", "admin")
	standInPod(t, "recorded")

	// The data plane: a session of the service account ns/sre.
	sreSession(t, ns, "recorded-dp")
	sre := dataPlaneKubeconfig(t, ns, "recorded-dp", "sre")

	// What is typed into each stream, by session and by the protocol the
	// target chose: kubectl speaks WebSocket (v5.channel.k8s.io) unless
	// told to use SPDY (v4.channel.k8s.io).
	const websocket, spdy = "v5.channel.k8s.io", "v4.channel.k8s.io"
	typed := map[string]map[string]string{
		"recorded":    {websocket: "typed through the aggregated proxy\nand a second line\n", spdy: "typed over SPDY\n"},
		"recorded-dp": {websocket: "typed through the data plane\n"},
	}
	for _, run := range []struct{ session, kubeconfig, protocol string }{
		{"recorded", aliceSession, websocket}, {"recorded", aliceSession, spdy}, {"recorded-dp", sre, websocket},
	} {
		t.Run("exec "+run.session+" "+run.protocol, func(t *testing.T) {
			if run.protocol == spdy {
				t.Setenv("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
			}
			in := typed[run.session][run.protocol]
			out, err := cp.Kubectl(ctx, run.kubeconfig, []byte(in), "-n", "default", "exec", "-i", "recorded", "--", "cat")
			if err != nil || string(out) != in {
				t.Fatalf("exec -i cat: %q %v", out, err)
			}
		})
	}
	// A plain request, which only the request log keeps.
	kubectlAs(t, aliceSession, "get", "namespaces", "kube-system", "-o", "name")

	// The sessions go; their recordings stay.
	kubectl(t, "-n", ns, "delete", "sessions", "recorded", "recorded-dp", "--wait")

	auditor := userKubeconfig(t, "audrey")
	grant(t, ns, "audrey", "clustergate:session-auditor")
	for session, way := range map[string]string{"recorded": "aggregated", "recorded-dp": "data_plane"} {
		t.Run(way, func(t *testing.T) {
			var streams struct{ Items []recording.StreamSummary }
			// The last chunk and the manifest are written as the stream ends.
			eventually(t, 10*time.Second, "the recordings are finished", func() error {
				out := mustSession(t, auditor, ns, "", "recordings", session, "-o", "json")
				if err := json.Unmarshal([]byte(out), &streams); err != nil {
					return err
				}
				if len(streams.Items) != len(typed[session]) {
					return fmt.Errorf("streams %+v", streams.Items)
				}
				for _, s := range streams.Items {
					if s.Manifest == nil {
						return fmt.Errorf("stream %s unfinished", s.Stream)
					}
				}
				return nil
			})
			list := mustSession(t, auditor, ns, "", "recordings", session)
			// The request log is written every --recording-flush-interval.
			last := "/pods/recorded/exec"
			if session == "recorded" {
				last = "/api/v1/namespaces/kube-system"
			}
			var history string
			eventually(t, 10*time.Second, "the request log has the last request", func() error {
				if history = mustSession(t, auditor, ns, "", "history", session); !strings.Contains(history, last) {
					return fmt.Errorf("history without %s", last)
				}
				return nil
			})
			for _, s := range streams.Items {
				in, ok := typed[session][s.Manifest.Protocol]
				if !ok || s.Owner == "" || s.Way != way || s.Pod != "recorded" || strings.Join(s.Command, " ") != "cat" || !s.Stdin || s.Manifest.Failed != "" {
					t.Errorf("stream %+v, manifest %+v", s, s.Manifest)
					continue
				}
				// cat echoes every line: what was typed, then what came back.
				replay := mustSession(t, auditor, ns, "", "replay", session, s.Stream, "--speed", "0")
				if want := in + in; replay != want && !sameLines(replay, want) {
					t.Errorf("%s: replay printed %q, want what was typed and its echo %q", s.Manifest.Protocol, replay, want)
				}
				cast := mustSession(t, auditor, ns, "", "replay", session, s.Stream, "-o", "json")
				if int64(len(cast)) != s.Manifest.Length {
					t.Errorf("the asciicast has %d bytes, the manifest says %d", len(cast), s.Manifest.Length)
				}
				if !strings.Contains(list, s.Stream) || !strings.Contains(history, s.Stream) {
					t.Errorf("stream %s is not in the list or the history:\n%s\n%s", s.Stream, list, history)
				}
			}
			if !strings.Contains(history, "/api/v1/namespaces/default/pods/recorded/exec") || !strings.Contains(history, " 101 ") {
				t.Errorf("history:\n%s", history)
			}
		})
	}
	t.Run("the owner may not read the recording", func(t *testing.T) {
		const why = `User "alice" cannot get resource "sessions/recordings"`
		refused(t, alice, ns, why, "recordings", "recorded")
		refused(t, alice, ns, why, "history", "recorded")
		refused(t, alice, ns, why, "replay", "recorded", "any")
	})
}

// sameLines says whether a and b hold the same lines in any interleaving
// that keeps each line whole: input and its echo are two streams.
func sameLines(a, b string) bool {
	count := map[string]int{}
	for _, l := range strings.SplitAfter(a, "\n") {
		count[l]++
	}
	for _, l := range strings.SplitAfter(b, "\n") {
		count[l]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
