// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// TestFollowLive: while alice types into kubectl exec through her session,
// the auditor audrey follows the stream with kubectl session replay
// --follow through the aggregated path and sees each line within seconds;
// when the stream ends the follow ends too, its signed manifest checked.
func TestFollowLive(t *testing.T) {
	t.Parallel()
	ns, _, session, _ := proxySessionWith(t, "follow", "followed", "1h", "admin")
	standInPod(t, "followed")
	grant(t, ns, "audrey", "clustergate:session-auditor")
	audrey := userKubeconfig(t, "audrey")

	typing := startExec(t, session, "followed", false)
	typing.typeLine(t, "before the follower came")
	var stream string
	eventually(t, 30*time.Second, "the stream of cat listed", func() error {
		stdout, _, _ := kubectlSession(t, audrey, ns, "recordings", "followed")
		for _, line := range strings.Split(stdout, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "cat") {
				stream = f[0]
				return nil
			}
		}
		return fmt.Errorf("no stream of cat in:\n%s", stdout)
	})

	follower := exec.Command("kubectl", "session", "replay", "followed", stream, "--follow", "--kubeconfig", audrey, "-n", ns)
	out, errOut := &e2echeck.SyncBuffer{}, &e2echeck.SyncBuffer{}
	follower.Stdout, follower.Stderr = out, errOut
	if err := follower.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- follower.Wait() }()
	t.Cleanup(func() { _ = follower.Process.Kill() })

	eventually(t, 15*time.Second, "the follower replays what came before", func() error {
		if !strings.Contains(out.String(), "before the follower came") {
			return fmt.Errorf("the follower printed %q, %q", out.String(), errOut.String())
		}
		return nil
	})
	typed := time.Now()
	typing.typeLine(t, "typed while followed")
	eventually(t, 15*time.Second, "the follower shows the line", func() error {
		if !strings.Contains(out.String(), "typed while followed") {
			return fmt.Errorf("the follower printed %q", out.String())
		}
		return nil
	})
	t.Logf("a typed line reached the follower %s after it was typed (the recorder flushes every 2s)", time.Since(typed).Round(10*time.Millisecond))

	if err := typing.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err != nil || !strings.Contains(errOut.String(), "recording ended and verified") {
			t.Errorf("the follow ended with %v, stderr %q; want the verified end", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the follow still runs 30s after the stream ended; stderr %q", errOut.String())
	}
}
