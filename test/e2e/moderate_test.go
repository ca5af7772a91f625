// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// moderatorWait is the replicas' --session-moderator-wait.
const moderatorWait = 15 * time.Second

// moderatorGone bounds, as docs/security.md says, how long a moderated
// stream runs on once its last moderator stopped following it: 10s after
// the moderator's last mark, plus the relay's 500ms poll.
const moderatorGone = 10*time.Second + 500*time.Millisecond

// TestModeratedStreams runs two replicas that keep recordings in S3 and
// require a moderator for admin sessions. The owner's kubectl exec -it
// through replica A's data plane shows on her terminal that it waits for a
// moderator; it runs once carol follows it with kubectl session moderate
// through replica B, and ends with carol's name and reason on the owner's
// terminal when carol ends it. The owner cannot moderate her own session,
// port-forward and kubectl debug are refused with a Status that says why,
// and an exec through the other way in (replica A's sessions/proxy) waits
// too and is refused once no moderator came in time. Who moderated is in
// the request log, the recording's manifest and the session's events.
func TestModeratedStreams(t *testing.T) {
	ctx := context.Background()
	s3, err := cp.StartS3(ctx, "moderated")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s3.Stop() }()
	// The control plane's levels, admin requiring a moderator.
	levels, err := sessionaccess.Load(filepath.Join("..", "..", "_output", "e2e-audit", "session-access.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range levels.Levels {
		levels.Levels[i].Moderated = levels.Levels[i].Name == sessionaccess.LevelAdmin
	}
	data, err := yaml.Marshal(levels)
	if err != nil {
		t.Fatal(err)
	}
	access := filepath.Join(t.TempDir(), "access.yaml")
	if err := os.WriteFile(access, data, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--recording=required", "--recording-s3-endpoint=" + s3.Endpoint, "--recording-s3-bucket=" + s3.Bucket,
		"--recording-s3-prefix=e2e/", "--recording-s3-region=us-east-1", "--recording-s3-credentials-file=" + s3.CredentialsFile,
		"--recording-flush-interval=1s", "--session-access-config=" + access, "--session-moderator-wait=" + moderatorWait.String()}
	var a, b localcluster.Replica
	for i, r := range []*localcluster.Replica{&a, &b} {
		if *r, err = cp.StartReplica(ctx, fmt.Sprintf("clustergate-moderated-%d", i+1), flags...); err != nil {
			t.Fatal(err)
		}
		name := r.Name
		defer func() { _ = cp.StopComponent(name) }()
	}

	ns := namespace(t, "moderated")
	standInPod(t, "moderated")
	sreSession(t, ns, "moderated")
	owner := localcluster.DataPlaneUserPrefix + "system:serviceaccount:" + ns + ":sre"
	grant(t, ns, "carol", "clustergate:session-moderator")
	// Holding the verb does not let the owner moderate her own session.
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-moderator", "--clusterrole=clustergate:session-moderator", "--user="+owner)
	// The owner's own session through sessions/proxy, the other way in.
	kubectl(t, "-n", ns, "create", "rolebinding", "sre-user", "--clusterrole=clustergate:session-user", "--user="+owner)
	alice := dataPlaneKubeconfigAt(t, a.DataPlaneURL, ns, "moderated", "sre")
	carol := replicaKubeconfig(t, b.URL, "carol", "")
	ownerOnB := replicaKubeconfig(t, b.URL, owner, "")

	t.Run("port-forward is refused", func(t *testing.T) {
		out, err := cp.Kubectl(ctx, alice, nil, "-n", "default", "port-forward", "pod/moderated", ":8080")
		if err == nil || !strings.Contains(err.Error(), "cannot be followed by a moderator") {
			t.Errorf("kubectl port-forward: %v %s", err, out)
		}
	})
	t.Run("kubectl debug is refused", func(t *testing.T) {
		out, err := cp.Kubectl(ctx, alice, nil, "-n", "default", "debug", "moderated", "--image=stand-in", "--", "cat")
		if err == nil || !strings.Contains(err.Error(), "ephemeralcontainers cannot be followed by a moderator") {
			t.Errorf("kubectl debug: %v %s", err, out)
		}
	})

	t.Run("kubectl debug node/NAME and a Job are refused", func(t *testing.T) {
		// A privileged pod with the host's root: what it runs starts from
		// its spec, with no stream to follow.
		out, err := cp.Kubectl(ctx, alice, nil, "debug", "node/"+localcluster.NodeName, "--image=stand-in", "--", "cat")
		if err == nil || !strings.Contains(err.Error(), "creating pods cannot be followed by a moderator") {
			t.Errorf("kubectl debug node/%s: %v %s", localcluster.NodeName, err, out)
		}
		out, err = cp.Kubectl(ctx, alice, nil, "-n", "default", "create", "job", "unfollowed", "--image=stand-in", "--", "cat")
		if err == nil || !strings.Contains(err.Error(), "creating jobs cannot be followed by a moderator") {
			t.Errorf("kubectl create job: %v %s", err, out)
		}
	})

	// The owner's kubectl exec -it, on a terminal.
	cmd := exec.Command("kubectl", "--kubeconfig", alice, "-n", "default", "exec", "-it", "moderated", "--", "cat")
	terminal, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: terminalCols, Rows: terminalRows})
	if err != nil {
		t.Fatal(err)
	}
	defer terminal.Close()
	defer func() { _ = cmd.Process.Kill() }()
	screen := &e2echeck.SyncBuffer{}
	go func() { _, _ = io.Copy(screen, terminal) }()
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	opened := time.Now()
	eventually(t, 20*time.Second, "the owner's terminal says that the stream waits for a moderator", func() error {
		if !strings.Contains(screen.String(), "waits for a moderator") {
			return fmt.Errorf("the terminal shows %q", screen.String())
		}
		return nil
	})
	t.Logf("the owner's terminal says it waits %s after kubectl exec started: %q", time.Since(opened).Round(time.Millisecond), screen.String())
	stream := liveModeratedStream(t, cp.FrontProxyConfig(b.URL, "carol"), ns)

	t.Run("the owner cannot moderate her own session", func(t *testing.T) {
		refused(t, ownerOnB, ns, "the owner of a session cannot moderate it", "moderate", "moderated", stream)
	})

	// Typed while no moderator follows: held until one does.
	if _, err := io.WriteString(terminal, "typed while waiting\r"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if strings.Contains(screen.String(), "typed while waiting\r\ntyped while waiting") {
		t.Fatalf("cat answered before a moderator followed: %q", screen.String())
	}

	moderator := exec.Command("kubectl", "session", "moderate", "moderated", stream, "--kubeconfig", carol, "-n", ns)
	seen, said := &e2echeck.SyncBuffer{}, &e2echeck.SyncBuffer{}
	moderator.Stdout, moderator.Stderr = seen, said
	if err := moderator.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = moderator.Process.Kill(); _ = moderator.Wait() }()
	followed := time.Now()
	eventually(t, 20*time.Second, "the stream runs once carol follows it", func() error {
		if !strings.Contains(screen.String(), "typed while waiting\r\ntyped while waiting") {
			return fmt.Errorf("the terminal shows %q; carol's follow %q %q", screen.String(), seen.String(), said.String())
		}
		return nil
	})
	t.Logf("the stream started %s after carol began to follow it", time.Since(followed).Round(time.Millisecond))
	typed := time.Now()
	if _, err := io.WriteString(terminal, "typed while moderated\r"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "carol sees what the owner typed", func() error {
		if !strings.Contains(seen.String(), "typed while moderated") {
			return fmt.Errorf("carol sees %q %q", seen.String(), said.String())
		}
		return nil
	})
	t.Logf("a typed line reached the moderator %s after it was typed", time.Since(typed).Round(10*time.Millisecond))

	mustSession(t, carol, ns, "ends", "moderate", "end", "moderated", stream, "--reason=enough for today")
	select {
	case err := <-ended:
		if err == nil {
			t.Error("kubectl exec ended without an error after carol ended its stream")
		}
		// The pty may still hold kubectl's last words when it exits.
		eventually(t, 5*time.Second, "the owner's terminal says why the stream ended", func() error {
			if !strings.Contains(screen.String(), "moderator carol ended the stream: enough for today") {
				return fmt.Errorf("the terminal shows %q", screen.String())
			}
			return nil
		})
	case <-time.After(15 * time.Second):
		t.Fatalf("kubectl exec still runs 15s after carol ended it: %q", screen.String())
	}

	t.Run("who moderated is recorded", func(t *testing.T) {
		auditor := cp.FrontProxyConfig(b.URL, "carol")
		base := "/apis/clustergate.dev/v1alpha1/namespaces/" + ns + "/sessions/moderated/recordings"
		eventually(t, 15*time.Second, "the manifest names carol", func() error {
			var list v1alpha1.SessionRecordingList
			if err := json.Unmarshal(getAs(t, auditor, base), &list); err != nil {
				return err
			}
			for _, s := range list.Items {
				if s.Stream == stream && s.Manifest != nil && len(s.Manifest.Moderators) == 1 && s.Manifest.Moderators[0].User == "carol" {
					return nil
				}
			}
			return fmt.Errorf("recordings %+v", list.Items)
		})
		eventually(t, 15*time.Second, "the request log names carol and the reason", func() error {
			var log v1alpha1.SessionRequestLog
			if err := json.Unmarshal(getAs(t, auditor, base+"/requests"), &log); err != nil {
				return err
			}
			for _, e := range log.Items {
				if e.Stream == stream && len(e.Moderators) == 1 && e.Moderators[0].User == "carol" && strings.Contains(e.CloseReason, "enough for today") {
					return nil
				}
			}
			return fmt.Errorf("request log %+v", log.Items)
		})
		eventually(t, 15*time.Second, "the session's events say who moderated", func() error {
			out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "get", "events", "--field-selector=involvedObject.name=moderated",
				"-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
			if err != nil || !strings.Contains(string(out), "ModeratorJoined: carol follows stream "+stream) ||
				!strings.Contains(string(out), "StreamEndedByModerator: carol ended stream "+stream) {
				return fmt.Errorf("events: %w %s", err, out)
			}
			return nil
		})
	})

	t.Run("over SPDY, an exec waits and ends when its last moderator leaves", func(t *testing.T) {
		e := startExec(t, alice, "moderated", true)
		eventually(t, 20*time.Second, "kubectl says over SPDY that the stream waits", func() error {
			if !strings.Contains(e.stderr.String(), "waits for a moderator") {
				return fmt.Errorf("stderr %q", e.stderr.String())
			}
			return nil
		})
		stream := liveModeratedStream(t, cp.FrontProxyConfig(b.URL, "carol"), ns)
		follow := exec.Command("kubectl", "session", "moderate", "moderated", stream, "--kubeconfig", carol, "-n", ns)
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		e.typeLine(t, "typed over SPDY")
		// Carol's follow goes away as a crashed terminal would.
		if err := follow.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = follow.Wait()
		left := time.Now()
		select {
		case err := <-e.ended:
			if err == nil || !strings.Contains(e.stderr.String(), "the last moderator stopped following the stream") {
				t.Errorf("kubectl exec ended with %v, stderr %q", err, e.stderr.String())
			}
			took := time.Since(left)
			t.Logf("the stream ended %s after its last moderator left", took.Round(10*time.Millisecond))
			// kubectl takes a moment to print the Status and exit.
			if took > moderatorGone+1500*time.Millisecond {
				t.Errorf("the stream ended %s after its last moderator left, later than the documented %s", took, moderatorGone)
			}
		case <-time.After(moderatorGone + 10*time.Second):
			t.Fatalf("kubectl exec still runs %s after its last moderator left: %q", moderatorGone+10*time.Second, e.stderr.String())
		}
		auditor := cp.FrontProxyConfig(b.URL, "carol")
		base := "/apis/clustergate.dev/v1alpha1/namespaces/" + ns + "/sessions/moderated/recordings"
		eventually(t, 15*time.Second, "the manifest and the request log say that carol left", func() error {
			var list v1alpha1.SessionRecordingList
			if err := json.Unmarshal(getAs(t, auditor, base), &list); err != nil {
				return err
			}
			var log v1alpha1.SessionRequestLog
			if err := json.Unmarshal(getAs(t, auditor, base+"/requests"), &log); err != nil {
				return err
			}
			manifested := slices.ContainsFunc(list.Items, func(s v1alpha1.SessionRecording) bool {
				return s.Stream == stream && s.Manifest != nil && len(s.Manifest.Moderators) == 1 && s.Manifest.Moderators[0].User == "carol" &&
					!s.Manifest.Moderators[0].To.IsZero()
			})
			logged := slices.ContainsFunc(log.Items, func(e v1alpha1.RequestLogEntry) bool {
				return e.Stream == stream && strings.Contains(e.CloseReason, "the last moderator stopped following the stream")
			})
			if !manifested || !logged {
				return fmt.Errorf("manifest %t, request log %t: %+v %+v", manifested, logged, list.Items, log.Items)
			}
			return nil
		})
		eventually(t, 15*time.Second, "the session's events say that no moderator follows the stream", func() error {
			out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "get", "events", "--field-selector=involvedObject.name=moderated",
				"-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
			if err != nil || !strings.Contains(string(out), "ModeratorsLeft: stream "+stream+" ended") {
				return fmt.Errorf("events: %w %s", err, out)
			}
			return nil
		})
	})

	t.Run("an exec through the other way in waits, and is refused without a moderator", func(t *testing.T) {
		// Replica A's sessions/proxy, as the owner: the aggregated path.
		aggregated := replicaKubeconfig(t, a.URL, owner, v1alpha1.ProxyEndpoint(ns, "moderated"))
		e := startExec(t, aggregated, "moderated", false)
		start := time.Now()
		eventually(t, 20*time.Second, "kubectl says that the stream waits", func() error {
			if !strings.Contains(e.stderr.String(), "waits for a moderator") {
				return fmt.Errorf("stderr %q", e.stderr.String())
			}
			return nil
		})
		select {
		case err := <-e.ended:
			if err == nil || !strings.Contains(e.stderr.String(), "no moderator followed the stream") {
				t.Errorf("kubectl exec ended with %v, stderr %q", err, e.stderr.String())
			}
			if took := time.Since(start); took < moderatorWait-time.Second {
				t.Errorf("refused after %s, before --session-moderator-wait=%s", took, moderatorWait)
			}
		case <-time.After(moderatorWait + 15*time.Second):
			t.Errorf("kubectl exec still waits %s after it started: %q", moderatorWait+15*time.Second, e.stderr.String())
		}
	})
}

// liveModeratedStream is the moderated stream of the session "moderated"
// in ns that runs or waits now, as its recordings list it to cfg.
func liveModeratedStream(t *testing.T, cfg *rest.Config, ns string) string {
	t.Helper()
	var stream string
	eventually(t, 15*time.Second, "a live moderated stream is listed", func() error {
		var list v1alpha1.SessionRecordingList
		if err := json.Unmarshal(getAs(t, cfg, "/apis/clustergate.dev/v1alpha1/namespaces/"+ns+"/sessions/moderated/recordings"), &list); err != nil {
			return err
		}
		for _, s := range list.Items {
			if s.Manifest == nil && s.Moderated {
				stream = s.Stream
				return nil
			}
		}
		return fmt.Errorf("no live moderated stream in %+v", list.Items)
	})
	return stream
}

// replicaKubeconfig serves, until the test ends, a local endpoint that
// forwards to the clustergate replica at url as user, the way the
// aggregator does, and returns a kubeconfig whose server is that endpoint
// plus path: kubectl then reaches that one replica, which no kubeconfig
// through kube-apiserver does.
func replicaKubeconfig(t *testing.T, url, user, path string) string {
	t.Helper()
	transport, err := rest.TransportFor(cp.FrontProxyConfig(url, user))
	if err != nil {
		t.Fatal(err)
	}
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	forward := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1,
	}
	server := httptest.NewServer(forward)
	t.Cleanup(server.Close)
	kubeconfig := filepath.Join(t.TempDir(), "replica.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: r, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: r, user: u}}]
current-context: c
`, server.URL+path)), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
