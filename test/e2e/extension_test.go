// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestExtensionKeepsStreams extends a session on two replicas while
// WebSocket watches on both and an interactive kubectl exec are open: all of
// them outlive the original expiry and end within a second of the new one.
func TestExtensionKeepsStreams(t *testing.T) {
	ctx := context.Background()
	replica, err := cp.StartReplica(ctx, "clustergate-extend")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	ns, alice, session, s := proxySessionWith(t, "extend-streams", "extended", "20s", "admin")
	standInPod(t, "extend-exec")
	ends := watchOnEveryReplica(t, session, []string{cp.ClustergateURL, replica.URL})

	stdin, hold := io.Pipe()
	cmd := exec.Command("kubectl", "--kubeconfig", session, "-n", "default", "exec", "-i", "extend-exec", "--", "cat")
	cmd.Stdin = stdin
	out := &stampedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fmt.Fprintln(hold, "before")

	// The owner extends by 10s, with the verb extend of session-user.
	oldExpiry := s.Status.ExpiresAt.Time
	extended, err := extendTo(clientOf(t, alice), ns, s.Name, oldExpiry.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	newExpiry := extended.Status.ExpiresAt.Time
	if !newExpiry.Equal(oldExpiry.Add(10 * time.Second)) {
		t.Fatalf("expiresAt %s after the extension, want %s", newExpiry, oldExpiry.Add(10*time.Second))
	}
	// Moving it back is refused.
	_, err = extendTo(clientOf(t, alice), ns, s.Name, oldExpiry)
	wantErr(t, err, "never moves it earlier")

	time.Sleep(time.Until(oldExpiry.Add(2 * time.Second)))
	fmt.Fprintln(hold, "after the old expiry")
	for i, end := range ends {
		select {
		case at := <-end:
			t.Fatalf("watch %d ended at %s, before the new expiry %s", i+1, at, newExpiry)
		default:
		}
	}
	eventually(t, 5*time.Second, "the exec stream carries data after the old expiry", func() error {
		if !strings.Contains(out.String(), "after the old expiry") {
			return fmt.Errorf("output so far %q", out.String())
		}
		return nil
	})

	for i, end := range ends {
		select {
		case at := <-end:
			late := at.Sub(newExpiry)
			t.Logf("watch %d ended %s after the new expiresAt", i+1, late)
			if late > time.Second || late < -time.Second {
				t.Errorf("watch %d ended %s after the new expiresAt, want within 1s", i+1, late)
			}
		case <-time.After(time.Until(newExpiry.Add(10 * time.Second))):
			t.Fatalf("watch %d outlived the extended session", i+1)
		}
	}
	eventually(t, time.Until(newExpiry.Add(10*time.Second)), "kubectl exec reports the end of the stream", func() error {
		if !strings.Contains(out.String(), "error") {
			return fmt.Errorf("output so far %q", out.String())
		}
		return nil
	})
	late := out.when("error").Sub(newExpiry)
	t.Logf("kubectl exec reported the end of its stream %s after the new expiresAt", late)
	if late < -time.Second || late > time.Second {
		t.Errorf("the exec stream ended %s after the new expiresAt, want within 1s", late)
	}
}
