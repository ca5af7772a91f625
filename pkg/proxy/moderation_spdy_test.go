// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// spdyExec is client-go's SPDY executor (kubectl's with
// KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false) running cat through a proxy.
type spdyExec struct {
	typing         *io.PipeWriter
	stdout, stderr *lockedBuffer
	ended          chan error
}

func startSPDYExec(t *testing.T, base string) *spdyExec {
	t.Helper()
	u, err := url.Parse(strings.Replace(base, "ws://", "http://", 1) + "/proxy" + execPath + "&stderr=true")
	must(t, err)
	executor, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: u.Host}, http.MethodPost, u)
	must(t, err)
	stdin, typing := io.Pipe()
	e := &spdyExec{typing: typing, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, ended: make(chan error, 1)}
	go func() {
		e.ended <- executor.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: stdin, Stdout: e.stdout, Stderr: e.stderr})
	}()
	t.Cleanup(func() { _ = typing.Close() })
	return e
}

// until waits up to 10s for what to hold.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModeratedSPDY: a moderated exec over SPDY, from client-go's SPDY
// executor, shows on its standard error that it waits for a moderator and
// holds what is typed meanwhile; it runs once a moderator follows, and ends
// with the moderator's name and reason; without a moderator in time it is
// refused with a Status that says so.
func TestModeratedSPDY(t *testing.T) {
	dir := t.TempDir()
	local, err := store.NewLocal(dir)
	must(t, err)
	keys := manifestKeys(t)
	rec := recording.New(recording.Config{Store: local, Mode: recording.ModeRequired, FlushInterval: 50 * time.Millisecond, Keys: keys})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		rec.Run(ctx)
	}()
	t.Cleanup(func() { stop(); <-ran })
	r := NewTracker(clock.RealClock{}, Limits{})
	r.RecordWith(rec)
	r.EnforceAccess(&sessionaccess.Configuration{Levels: []sessionaccess.Level{{Name: "admin", Group: "admins", Moderated: true}}})
	r.Moderate(ModerationConfig{Wait: 2 * time.Second, Poll: 50 * time.Millisecond})
	tgt := echoSPDYExecBackend(t)
	tgt.Level = "admin"
	base := serveProxy(t, r, tgt)
	reader := recording.Reader{Store: local, Keys: keys}

	t.Run("waits, runs while moderated, ends with the moderator's reason", func(t *testing.T) {
		e := startSPDYExec(t, base)
		until(t, "standard error says that the stream waits", func() bool { return strings.Contains(e.stderr.String(), "waits for a moderator") })
		_, _ = io.WriteString(e.typing, "typed while waiting\n")
		time.Sleep(300 * time.Millisecond)
		if out := e.stdout.String(); out != "" {
			t.Fatalf("cat answered before a moderator followed: %q", out)
		}
		streams, err := reader.Streams(context.Background(), tgt.Namespace, tgt.Name)
		must(t, err)
		var stream string
		for _, s := range streams {
			if s.Manifest == nil {
				stream = s.Stream
			}
		}
		cast, err := reader.OpenCast(context.Background(), tgt.Namespace, tgt.Name, stream, false)
		must(t, err)
		unmark, err := reader.Moderate(context.Background(), cast, "carol")
		must(t, err)
		defer unmark()
		until(t, "what was typed reaches cat", func() bool { return e.stdout.String() == "typed while waiting\n" })
		_, _ = io.WriteString(e.typing, "typed while moderated\n")
		until(t, "cat echoes", func() bool { return strings.HasSuffix(e.stdout.String(), "typed while moderated\n") })
		must(t, reader.EndStream(context.Background(), tgt.Namespace, tgt.Name, stream, "carol", "enough for today"))
		select {
		case err := <-e.ended:
			if err == nil || !strings.Contains(err.Error(), "moderator carol ended the stream: enough for today") {
				t.Errorf("the exec ended with %v, want the moderator's reason", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the exec still runs 10s after the moderator ended it")
		}
		manifest, input := recordedInput(t, local)
		if manifest.Failed != "" || string(input) != "typed while waiting\ntyped while moderated\n" || len(manifest.Moderators) != 1 {
			t.Errorf("recorded input %q, manifest %+v", input, manifest)
		}
	})
	t.Run("refused with a Status when no moderator comes", func(t *testing.T) {
		e := startSPDYExec(t, base)
		start := time.Now()
		select {
		case err := <-e.ended:
			if err == nil || !strings.Contains(err.Error(), "no moderator followed the stream") {
				t.Errorf("the exec ended with %v, want the refusal", err)
			}
			if took := time.Since(start); took < 2*time.Second {
				t.Errorf("refused after %s, before the 2s wait", took)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the exec still waits after 10s")
		}
		if !strings.Contains(e.stderr.String(), "waits for a moderator") {
			t.Errorf("standard error says %q", e.stderr.String())
		}
	})
}
