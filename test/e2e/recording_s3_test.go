// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/recording"
)

// TestRecordingS3 runs two replicas that keep recordings in a real S3
// server (versitygw) under --recording=required: an exec through each
// replica is read back, after the session is deleted, from either replica;
// while the S3 server is stopped a new exec is refused, and once it is back
// exec works again.
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
	// stream typed into, whichever replica recorded it.
	typed := map[string]bool{}
	finished := func(t *testing.T, r localcluster.Replica) []recording.StreamSummary {
		t.Helper()
		var streams struct{ Items []recording.StreamSummary }
		eventually(t, 15*time.Second, "every recording is finished", func() error {
			if err := json.Unmarshal(getAs(t, cp.FrontProxyConfig(r.URL, "audrey"), base), &streams); err != nil {
				return err
			}
			if len(streams.Items) != len(typed) {
				return fmt.Errorf("streams %+v", streams.Items)
			}
			for _, s := range streams.Items {
				if s.Manifest == nil {
					return fmt.Errorf("stream %s unfinished", s.Stream)
				}
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

	t.Run("required refuses streams while the store is down", func(t *testing.T) {
		// A recording's last chunk and manifest are written as its stream
		// ends: stop the store only once they are.
		finished(t, replicas[0])
		if err := s3.Stop(); err != nil {
			t.Fatal(err)
		}
		out, err := exec(replicas[0], "not recorded\n")
		if err == nil || !strings.Contains(out+err.Error(), "must record interactive streams (--recording=required) and cannot") {
			t.Errorf("exec while the S3 server is stopped: %q %v", out, err)
		}
		if err := s3.Start(ctx); err != nil {
			t.Fatal(err)
		}
		in := "typed after the store came back\n"
		if out, err := exec(replicas[1], in); err != nil || out != in {
			t.Errorf("exec after the S3 server is back: %q %v", out, err)
		}
		typed[in] = true
	})

	kubectl(t, "-n", ns, "delete", "session", "s3", "--wait")
	for _, r := range replicas {
		t.Run("read back from "+r.Name, func(t *testing.T) {
			auditor := cp.FrontProxyConfig(r.URL, "audrey")
			streams := finished(t, r)
			seen := map[string]bool{}
			for _, s := range streams {
				cast := string(getAs(t, auditor, base+"/streams/"+s.Stream))
				if int64(len(cast)) != s.Manifest.Length || s.Way != "data_plane" {
					t.Errorf("stream %+v: %d bytes of asciicast", s, len(cast))
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
				var requests struct{ Items []recording.Request }
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
