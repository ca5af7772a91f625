// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// TestRecordingS3 runs two replicas that keep recordings in a real S3
// server (versitygw) under --recording=required: an exec through each
// replica is read back, after the session is deleted, from either replica;
// when the S3 server stops, open execs (WebSocket and SPDY) are closed with
// a message saying the recording failed and a new exec is refused; once it
// is back exec works again.
func TestRecordingS3(t *testing.T) {
	ctx := context.Background()
	s3, err := cp.StartS3(ctx, "recordings")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s3.Stop() }()
	flags := []string{"--recording=required", "--recording-s3-endpoint=" + s3.Endpoint, "--recording-s3-bucket=" + s3.Bucket,
		"--recording-s3-prefix=e2e/", "--recording-s3-region=us-east-1", "--recording-s3-credentials-file=" + s3.CredentialsFile, "--recording-flush-interval=1s"}
	replicas := make([]localcluster.Replica, 2)
	for i := range replicas {
		r, err := cp.StartReplica(ctx, fmt.Sprintf("clustergate-s3-%d", i+1), flags...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cp.StopComponent(r.Name) }()
		replicas[i] = r
	}

	ns := namespace(t, "recording-s3")
	standInPod(t, "recorded-s3")
	sreSession(t, ns, "s3")

	exec := func(r localcluster.Replica, in string) (string, error) {
		out, err := cp.Kubectl(ctx, dataPlaneKubeconfigAt(t, r.DataPlaneURL, ns, "s3", "sre"), []byte(in), "-n", "default", "exec", "-i", "recorded-s3", "--", "cat")
		return string(out), err
	}
	base := fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/s3/recordings", ns)
	grant(t, ns, "audrey", "clustergate:session-auditor")
	// finished waits until replica r lists a finished recording of every
	// stream typed into, whichever replica recorded it, and the recordings
	// cut by the store's outage (cut), finished or not.
	typed, cut := map[string]bool{}, 0
	finished := func(t *testing.T, r localcluster.Replica) []v1alpha1.SessionRecording {
		t.Helper()
		var streams v1alpha1.SessionRecordingList
		eventually(t, 15*time.Second, "every recording is finished", func() error {
			if err := json.Unmarshal(getAs(t, cp.FrontProxyConfig(r.URL, "audrey"), base), &streams); err != nil {
				return err
			}
			if len(streams.Items) != len(typed)+cut {
				return fmt.Errorf("streams %+v", streams.Items)
			}
			complete := 0
			for _, s := range streams.Items {
				if s.Manifest != nil && s.Manifest.Failed == "" {
					complete++
				}
			}
			if complete != len(typed) {
				return fmt.Errorf("%d of %d recordings finished: %+v", complete, len(typed), streams.Items)
			}
			return nil
		})
		return streams.Items
	}
	for i, r := range replicas {
		in := fmt.Sprintf("typed through replica %d\n", i+1)
		if out, err := exec(r, in); err != nil || out != in {
			t.Fatalf("exec -i cat through %s: %q %v", r.Name, out, err)
		}
		typed[in] = true
	}

	t.Run("required closes open streams and refuses new ones while the store is down", func(t *testing.T) {
		// A recording's last chunk and manifest are written as its stream
		// ends: stop the store only once they are.
		finished(t, replicas[0])
		kubeconfig := dataPlaneKubeconfigAt(t, replicas[0].DataPlaneURL, ns, "s3", "sre")
		open := map[string]*openExec{
			"WebSocket": startExec(t, kubeconfig, "recorded-s3", false),
			"SPDY":      startExec(t, kubeconfig, "recorded-s3", true),
		}
		for _, e := range open {
			e.typeLine(t, "typed before the store went down")
		}
		if err := s3.Stop(); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		cut = len(open)
		// A recording writes what it was given every
		// --recording-flush-interval (1s), each write bounded by the
		// recorder's write timeout (10s): the streams end within both.
		const within = 11 * time.Second
		for protocol, e := range open {
			t.Run(protocol, func(t *testing.T) {
				stderr, err := e.endsWhileTyping(within)
				t.Logf("kubectl exec ended %s after the store stopped: %v: %s", time.Since(stopped).Round(time.Millisecond), err, stderr)
				if err == nil || !strings.Contains(stderr, "recording required: ") {
					t.Errorf("kubectl exec ended %s after the store stopped: %v, stderr %q; want an error saying the recording failed",
						time.Since(stopped).Round(time.Millisecond), err, stderr)
				}
			})
		}
		// Refused: with the store down the session's request log cannot be
		// written either, so its requests fail closed before the stream
		// could open (or, had the log been written, the stream's recording
		// refuses it).
		out, err := exec(replicas[0], "not recorded\n")
		if err == nil || !strings.Contains(out+err.Error(), "(--recording=required) and cannot") {
			t.Errorf("exec while the S3 server is stopped: %q %v", out, err)
		}
		if err := s3.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// A replica whose request log's last write failed refuses the
		// session's requests until its next flush writes the log
		// (--recording-flush-interval, 1s): the store coming back between
		// a failed flush and the next one leaves up to that refused.
		in := "typed after the store came back\n"
		eventually(t, 10*time.Second, "exec after the S3 server is back", func() error {
			out, err := exec(replicas[1], in)
			if err == nil && out != in {
				err = fmt.Errorf("cat echoed %q", out)
			}
			return err
		})
		typed[in] = true
	})

	kubectl(t, "-n", ns, "delete", "session", "s3", "--wait")
	for _, r := range replicas {
		t.Run("read back from "+r.Name, func(t *testing.T) {
			auditor := cp.FrontProxyConfig(r.URL, "audrey")
			streams := finished(t, r)
			seen := map[string]bool{}
			for _, s := range streams {
				if s.Manifest == nil || s.Manifest.Failed != "" {
					// Cut by the store's outage.
					continue
				}
				cast := string(getAs(t, auditor, base+"/streams/"+s.Stream))
				if s.Manifest.CaptureLength != s.Bytes || s.Way != "data_plane" {
					t.Errorf("stream %+v: %d bytes stored", s, s.Bytes)
				}
				for in := range typed {
					if strings.Contains(cast, strings.TrimSuffix(in, "\n")) {
						seen[in] = true
					}
				}
			}
			if len(seen) != len(typed) {
				t.Errorf("the recordings hold %v, want %v", seen, typed)
			}
			eventually(t, 15*time.Second, "the request log of both replicas", func() error {
				var requests v1alpha1.SessionRequestLog
				if err := json.Unmarshal(getAs(t, auditor, base+"/requests"), &requests); err != nil {
					return err
				}
				execs := 0
				for _, req := range requests.Items {
					if strings.HasSuffix(req.Path, "/pods/recorded-s3/exec") {
						execs++
					}
				}
				// The refused exec is logged too.
				if execs < len(typed)+1 {
					return fmt.Errorf("%d exec requests in %+v", execs, requests.Items)
				}
				return nil
			})
		})
	}
}

// openExec is a kubectl exec -i of cat that runs until its standard input
// closes.
type openExec struct {
	stdin  io.WriteCloser
	stdout *e2echeck.SyncBuffer
	stderr *e2echeck.SyncBuffer
	ended  chan error
}

// startExec starts kubectl exec -i of cat in pod, over SPDY if spdy is set
// (WebSocket otherwise), and stops it when the test ends.
func startExec(t *testing.T, kubeconfig, pod string, spdy bool) *openExec {
	t.Helper()
	cmd := osexec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", "default", "exec", "-i", pod, "--", "cat")
	cmd.Env = append(os.Environ(), fmt.Sprintf("KUBECTL_REMOTE_COMMAND_WEBSOCKETS=%t", !spdy))
	e := &openExec{stdout: &e2echeck.SyncBuffer{}, stderr: &e2echeck.SyncBuffer{}, ended: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	var err error
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.ended <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = e.stdin.Close()
	})
	return e
}

// typeLine types line into the exec and waits for cat's echo.
func (e *openExec) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(e.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "cat echoes the line", func() error {
		if !strings.Contains(e.stdout.String(), line+"\n") {
			return fmt.Errorf("kubectl printed %q, stderr %q", e.stdout.String(), e.stderr.String())
		}
		return nil
	})
}

// endsWhileTyping types a line every 100ms, as someone at work would, until
// kubectl exits, for at most within; it returns what kubectl printed on
// standard error and how it exited.
func (e *openExec) endsWhileTyping(within time.Duration) (string, error) {
	deadline := time.After(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-e.ended:
			return e.stderr.String(), err
		case <-deadline:
			return e.stderr.String(), fmt.Errorf("kubectl exec still runs after %s", within)
		case <-tick.C:
			_, _ = io.WriteString(e.stdin, "typed while the store is down\n")
		}
	}
}

// getAs reads path from the server of cfg, failing the test on an error.
func getAs(t *testing.T, cfg *rest.Config, path string) []byte {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s %v", path, resp.Status, body, err)
	}
	return body
}
