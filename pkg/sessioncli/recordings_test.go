// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// runCommand runs kubectl session with args against a, whose sessions/fix
// recordings answer recorded, and returns what it printed.
func (a *fakeAPI) runCommand(t *testing.T, recorded map[string]string, args ...string) (out, errOut string, err error) {
	t.Helper()
	a.recorded.Store(&recorded)
	var o, e bytes.Buffer
	cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &o, ErrOut: &e})
	cmd.SetArgs(append(args, "--kubeconfig", *a.g.flags.KubeConfig))
	err = cmd.Execute()
	return o.String(), e.String(), err
}

// mustJSON is v in JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRecordingTables prints the streams and the request log of a session
// whose owner chose paths, pods, containers and commands that would forge
// rows or erase them on the auditor's terminal: every such text is shown as
// kubectl shows a table cell (cut at a line break with "...", ESC as ^[, CR
// as \r), other controls in caret notation; -o json is the data as recorded.
func TestRecordingTables(t *testing.T) {
	a := newFakeAPI(t)
	started := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	request := func(path, query string) v1alpha1.RequestLogEntry {
		return v1alpha1.RequestLogEntry{Time: started, Way: "aggregated", Method: "GET", Path: path, Query: query, Status: 200,
			BytesIn: 1, BytesOut: 2, Duration: "3ms"}
	}
	requestItems := []v1alpha1.RequestLogEntry{
		request("/api/v1/namespaces", ""),
		// A newline would start a row of its own, the same as a real one.
		request("/api/v1/pods\n2026-12-03T09:00:00Z  aggregated  DELETE  /x  200", ""),
		// Cursor up, erase the row above, carriage return: a row erased.
		request("/api/v1/x\x1b[1A\x1b[2K\r", "watch=1\rforged"),
		// Backspaces overwrite the columns before; a tab makes a column.
		request("/a\b\b\b\b\b\bDELETE\t404", ""),
		// C1 CSI, as UTF-8, and DEL.
		request("/b\u009b2K\x7f", ""),
	}
	requests := mustJSON(t, map[string]any{"items": requestItems})
	stream := func(id, pod, container string, command ...string) v1alpha1.SessionRecording {
		return v1alpha1.SessionRecording{RecordingInfo: v1alpha1.RecordingInfo{Stream: id, Way: "aggregated", Subresource: "exec",
			PodNamespace: "default", Pod: pod, Container: container, Command: command, StartTime: started}, Bytes: 10}
	}
	streams := mustJSON(t, map[string]any{"items": []v1alpha1.SessionRecording{
		stream("s1", "web", "", "sh"),
		stream("s2", "web\rforged", "c\nforged row", "sh", "-c", "\x1b]52;c;ZXZpbA==\x07"),
		stream("s3", "web", "c\x1b[8m", "printf", "\x1b[2J"),
	}})
	recorded := map[string]string{"": streams, "requests": requests}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "history", args: []string{"history", "fix"}, want: "" +
			"TIME                   WAY          METHOD   PATH                                                             STATUS   IN    OUT   DURATION   STREAM\n" +
			"2026-12-03T09:00:00Z   aggregated   GET      /api/v1/namespaces                                               200      1     2     3ms        -\n" +
			"2026-12-03T09:00:00Z   aggregated   GET      /api/v1/pods...                                                  200      1     2     3ms        -\n" +
			"2026-12-03T09:00:00Z   aggregated   GET      /api/v1/x^[[1A^[[2K...                                           200      1     2     3ms        -\n" +
			"2026-12-03T09:00:00Z   aggregated   GET      /a^H^H^H^H^H^HDELETE^I404                                        200      1     2     3ms        -\n" +
			"2026-12-03T09:00:00Z   aggregated   GET      /b^[[2K^?                                                        200      1     2     3ms        -\n"},
		{name: "recordings", args: []string{"recordings", "fix"}, want: "" +
			"STREAM   KIND   POD                  CONTAINER      COMMAND                    WAY          STARTED                DURATION   BYTES   STATE\n" +
			"s1       exec   default/web          -              sh                         aggregated   2026-12-03T09:00:00Z   -          10      recording or cut off\n" +
			"s2       exec   default/web...       c...           sh -c ^[]52;c;ZXZpbA==^G   aggregated   2026-12-03T09:00:00Z   -          10      recording or cut off\n" +
			"s3       exec   default/web          c^[[8m         printf ^[[2J               aggregated   2026-12-03T09:00:00Z   -          10      recording or cut off\n"},
		// The whole log, as the plugin read it page by page.
		{name: "history -o json", args: []string{"history", "fix", "-o", "json"},
			want: mustJSON(t, map[string]any{"kind": "SessionRequestLog", "apiVersion": "clustergate.dev/v1alpha1", "items": requestItems}) + "\n"},
		{name: "recordings -o json", args: []string{"recordings", "fix", "-o", "json"}, want: streams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := a.runCommand(t, recorded, tt.args...)
			if err != nil {
				t.Fatalf("%v (%s)", err, errOut)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if strings.Contains(tt.name, "json") {
				return
			}
			if strings.Count(out, "\n") != strings.Count(tt.want, "\n") || strings.ContainsAny(out, "\r\x1b\b\t\x7f\u009b") {
				t.Errorf("output %q has rows of its own or controls", out)
			}
		})
	}
}

// TestReplay plays a recording whose program wrote a clipboard write and a
// status request, cut across events, and whose end message holds a title
// and a line break: the replay draws what the owner saw and says what it
// left out; --raw plays every byte; -o json is the recording itself.
func TestReplay(t *testing.T) {
	a := newFakeAPI(t)
	header := mustJSON(t, map[string]any{"version": 2, "width": 80, "height": 24, "clustergate": v1alpha1.RecordingInfo{Stream: "s1", TTY: true}})
	var cast strings.Builder
	cast.WriteString(header + "\n")
	events := [][3]any{
		{0.1, "o", "\x1b]52;c;"}, {0.2, "o", "ZXZpbA==\x07ok \x1b[1"}, {0.3, "o", "mbold\x1b[0m\r\n"},
		{0.4, "i", "typed"}, {0.5, "o", "\x1b[6n\u009b1;1H"}, {0.6, "m", "exit: \x1b]0;x\x07\nforged"},
	}
	for _, e := range events {
		cast.WriteString(mustJSON(t, e) + "\n")
	}
	recorded := map[string]string{"streams/s1": cast.String()}
	const shown = "\x1b]52;c;ZXZpbA==\x07ok \x1b[1mbold\x1b[0m\r\n\x1b[6n\u009b1;1H"
	const ended = "[exit: ^[]0;x^G\\nforged]\n"
	tests := []struct {
		name             string
		args             []string
		want, wantErrOut string
	}{
		{name: "filtered", want: "ok \x1b[1mbold\x1b[0m\r\n\x1b[1;1H",
			wantErrOut: ended + "[2 control sequences that act on the terminal rather than draw left out; --raw plays them]\n"},
		{name: "raw", args: []string{"--raw"}, want: shown, wantErrOut: ended},
		{name: "json", args: []string{"-o", "json"}, want: cast.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := a.runCommand(t, recorded, append([]string{"replay", "fix", "s1", "--speed", "0"}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v (%s)", err, errOut)
			}
			if out != tt.want || errOut != tt.wantErrOut {
				t.Errorf("output %q, error output %q; want %q, %q", out, errOut, tt.want, tt.wantErrOut)
			}
		})
	}
}
