// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
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

	// The streams typed into: kubectl speaks WebSocket (v5.channel.k8s.io)
	// unless told to use SPDY (v4.channel.k8s.io); with -t it types on a
	// terminal.
	const websocket, spdy = "v5.channel.k8s.io", "v4.channel.k8s.io"
	runs := []*recordedExec{
		{session: "recorded", kubeconfig: aliceSession, protocol: websocket, typed: "typed through the aggregated proxy\nand a second line\n"},
		{session: "recorded", kubeconfig: aliceSession, protocol: spdy, typed: "typed over SPDY\n"},
		{session: "recorded-dp", kubeconfig: sre, protocol: websocket, typed: "typed through the data plane\n"},
		{session: "recorded", kubeconfig: aliceSession, protocol: websocket, tty: true},
		{session: "recorded", kubeconfig: aliceSession, protocol: spdy, tty: true},
		{session: "recorded-dp", kubeconfig: sre, protocol: websocket, tty: true},
	}
	for _, run := range runs {
		t.Run(run.String(), func(t *testing.T) {
			if run.protocol == spdy {
				t.Setenv("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
			}
			if run.tty {
				run.typed, run.shown = execOnTerminal(t, run.kubeconfig, "recorded", "typed on a terminal "+run.session+" "+run.protocol, "after a resize")
				return
			}
			out, err := cp.Kubectl(ctx, run.kubeconfig, []byte(run.typed), "-n", "default", "exec", "-i", "recorded", "--", "cat")
			if err != nil || string(out) != run.typed {
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
			var streams v1alpha1.SessionRecordingList
			// The last chunk and the manifest are written as the stream ends.
			eventually(t, 10*time.Second, "the recordings are finished", func() error {
				out := mustSession(t, auditor, ns, "", "recordings", session, "-o", "json")
				if err := json.Unmarshal([]byte(out), &streams); err != nil {
					return err
				}
				if len(streams.Items) != countRuns(runs, session) {
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
				run := findRun(runs, session, s.Manifest.Protocol, s.TTY)
				if run == nil || s.Owner == "" || s.Way != way || s.Pod != "recorded" || strings.Join(s.Command, " ") != "cat" || !s.Stdin || s.Manifest.Failed != "" {
					t.Errorf("stream %+v, manifest %+v", s, s.Manifest)
					continue
				}
				replay := mustSession(t, auditor, ns, "", "replay", session, s.Stream, "--speed", "0")
				switch {
				case run.tty:
					// The terminal echoes what is typed: the replay shows
					// what the user's terminal showed, byte for byte.
					if replay != run.shown {
						t.Errorf("%s: replay printed %q, want what the terminal showed %q", run, replay, run.shown)
					}
				// cat echoes every line: what was typed, then what came back.
				case replay != run.typed+run.typed && !sameLines(replay, run.typed+run.typed):
					t.Errorf("%s: replay printed %q, want what was typed and its echo %q", run, replay, run.typed+run.typed)
				}
				// The server builds the asciicast only from chunks its
				// manifest describes.
				cast := mustSession(t, auditor, ns, "", "replay", session, s.Stream, "-o", "json")
				if s.Manifest.CaptureLength != s.Bytes || s.Manifest.Chunks == 0 {
					t.Errorf("%d bytes stored, the manifest says %d in %d chunks", s.Bytes, s.Manifest.CaptureLength, s.Manifest.Chunks)
				}
				if run.tty {
					checkTerminalCast(t, cast, run)
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
	t.Run("a recording changed in the store is refused", func(t *testing.T) {
		chunks, err := filepath.Glob(filepath.Join(cp.DataDir("*"), "recordings", ns, "recorded", "*", "streams", "*", "capture-000001"))
		if err != nil || len(chunks) == 0 {
			t.Fatalf("no chunk of the aggregated way's recordings in the local stores: %v", err)
		}
		data, err := os.ReadFile(chunks[0])
		if err != nil {
			t.Fatal(err)
		}
		changed := bytes.Clone(data)
		changed[len(changed)-1] ^= 1
		if err := os.WriteFile(chunks[0], changed, 0o600); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := os.WriteFile(chunks[0], data, 0o600); err != nil {
				t.Error(err)
			}
		}()
		stream := filepath.Base(filepath.Dir(chunks[0]))
		refused(t, auditor, ns, "the recording is not what was written", "replay", "recorded", stream, "--speed", "0")
	})
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

// recordedExec is one kubectl exec of cat whose recording TestRecording
// checks: what was typed into it and, on a terminal, what it showed.
type recordedExec struct {
	session, kubeconfig, protocol string
	tty                           bool
	typed, shown                  string
}

func (r *recordedExec) String() string {
	flags := "-i"
	if r.tty {
		flags = "-it"
	}
	return "exec " + flags + " " + r.session + " " + r.protocol
}

// countRuns is how many of runs went through session.
func countRuns(runs []*recordedExec, session string) int {
	n := 0
	for _, r := range runs {
		if r.session == session {
			n++
		}
	}
	return n
}

// findRun is the run through session with protocol and tty, nil if none.
func findRun(runs []*recordedExec, session, protocol string, tty bool) *recordedExec {
	for _, r := range runs {
		if r.session == session && r.protocol == protocol && r.tty == tty {
			return r
		}
	}
	return nil
}

// The window execOnTerminal starts with, and the one it changes to.
const (
	terminalCols, terminalRows = 80, 24
	resizedCols, resizedRows   = 120, 40
)

// execOnTerminal runs kubectl exec -it of cat in pod on a pseudo-terminal
// of its own, as a person at a terminal does: it types lines, each once
// the one before came back (Enter is a carriage return on a raw terminal),
// resizes the window after the first, and ends with Ctrl-D. It returns the
// bytes typed and the bytes the terminal showed.
func execOnTerminal(t *testing.T, kubeconfig, pod string, lines ...string) (typed, shown string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "-n", "default", "exec", "-it", pod, "--", "cat")
	terminal, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: terminalCols, Rows: terminalRows})
	if err != nil {
		t.Fatal(err)
	}
	defer terminal.Close()
	screen := &e2echeck.SyncBuffer{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		// The terminal reads fail (EIO) once kubectl is gone.
		_, _ = io.Copy(screen, terminal)
	}()
	// kubectl v1.32 logs to the terminal when a message reaches it before
	// it set up the message's stream (client-go's WebSocket executor, at
	// the start of a stream); its own line is not the pod's output.
	showing := func() string { return kubectlStreamRace.ReplaceAllString(screen.String(), "") }
	// Typed before kubectl makes the terminal raw, a line would be echoed
	// and edited by the test's terminal instead of the pod's.
	eventually(t, 15*time.Second, "kubectl makes the terminal raw", func() error {
		conn, err := terminal.SyscallConn()
		if err != nil {
			return err
		}
		var termios *unix.Termios
		if cerr := conn.Control(func(fd uintptr) { termios, err = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		if termios.Lflag&(unix.ICANON|unix.ECHO) != 0 {
			return fmt.Errorf("the terminal still echoes and edits lines: %s", showing())
		}
		return nil
	})
	var in, want strings.Builder
	typeIn := func(s string) {
		in.WriteString(s)
		if _, err := io.WriteString(terminal, s); err != nil {
			t.Fatal(err)
		}
	}
	for i, line := range lines {
		typeIn(line + "\r")
		// The pod's terminal echoes the line, then cat writes it back.
		want.WriteString(line + "\r\n" + line + "\r\n")
		eventually(t, 15*time.Second, "the line and cat's answer show", func() error {
			if got := showing(); got != want.String() {
				return fmt.Errorf("the terminal shows %q, want %q", got, want.String())
			}
			return nil
		})
		if i == 0 {
			if err := pty.Setsize(terminal, &pty.Winsize{Cols: resizedCols, Rows: resizedRows}); err != nil {
				t.Fatal(err)
			}
			// kubectl sends the new size on a stream of its own, apart
			// from what is typed next.
			time.Sleep(500 * time.Millisecond)
		}
	}
	typeIn("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kubectl exec -it: %v; the terminal shows %q", err, showing())
	}
	<-read
	return in.String(), showing()
}

// kubectlStreamRace is the line kubectl logs for a message on a stream it
// has not set up yet.
var kubectlStreamRace = regexp.MustCompile(`E\d{4} [0-9:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\r?\n`)

// checkTerminalCast checks the asciicast of run, typed on a terminal by
// execOnTerminal: its header says so and has the first window size, its
// input events are the bytes typed, its output events the bytes shown, and
// a resize event has the new window size.
func checkTerminalCast(t *testing.T, cast string, run *recordedExec) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(cast, "\n"), "\n")
	var header struct {
		Width, Height int
		Clustergate   v1alpha1.RecordingInfo
	}
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil {
		t.Fatalf("%s: header %q: %v", run, lines[0], err)
	}
	if !header.Clustergate.TTY || header.Width != terminalCols || header.Height != terminalRows {
		t.Errorf("%s: header %q, want tty and %dx%d", run, lines[0], terminalCols, terminalRows)
	}
	var input, output strings.Builder
	var resizes []string
	for _, line := range lines[1:] {
		var e [3]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: event %q: %v", run, line, err)
		}
		data, _ := e[2].(string)
		switch e[1] {
		case "i":
			input.WriteString(data)
		case "o":
			output.WriteString(data)
		case "r":
			resizes = append(resizes, data)
		}
	}
	if input.String() != run.typed {
		t.Errorf("%s: input events %q, want what was typed %q", run, input.String(), run.typed)
	}
	if output.String() != run.shown {
		t.Errorf("%s: output events %q, want what the terminal showed %q", run, output.String(), run.shown)
	}
	if resized := fmt.Sprintf("%dx%d", resizedCols, resizedRows); !slices.Contains(resizes, resized) {
		t.Errorf("%s: resize events %q, want one to %s", run, resizes, resized)
	}
}
