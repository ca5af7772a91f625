// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

const recordingsPath = "GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/recordings"

// runFor runs kubectl session with args against a until it returns or
// timeout passes.
func (a *fakeAPI) runFor(timeout time.Duration, args ...string) (out, errOut string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var o, e bytes.Buffer
	cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &o, ErrOut: &e})
	cmd.SetArgs(append(args, "--kubeconfig", *a.g.flags.KubeConfig))
	err = cmd.ExecuteContext(ctx)
	return o.String(), e.String(), err
}

// sendLines writes lines as a followed answer does, each sent at once.
func sendLines(w http.ResponseWriter, lines ...string) {
	for _, l := range lines {
		_, _ = w.Write([]byte(l + "\n"))
		w.(http.Flusher).Flush()
	}
}

// TestReplayFollow: replay --follow plays a live stream as the server
// sends it, once, across answers that kube-apiserver cuts at its request
// timeout, and ends with the server's last word on the recording.
func TestReplayFollow(t *testing.T) {
	header := `{"version":2,"width":80,"height":24,"clustergate":{"stream":"s1","tty":true},"clustergateVerification":"live"}`
	for _, tt := range []struct {
		name string
		// answers are the lines of each answer in turn; an answer that
		// does not end with an end marker is cut.
		answers                      [][]string
		status                       int
		args                         []string
		wantOut, wantErrOut, wantErr string
	}{
		{name: "ends verified, across a cut",
			answers: [][]string{
				{header, `[0.1, "o", "$ ls\r\n"]`},
				{header, `[0.1, "o", "$ ls\r\n"]`, `[1.2, "o", "bin\r\n\u001b]52;c;eA==\u0007"]`, `[2.0, "m", "recording ended and verified: its signed manifest describes every chunk followed"]`},
			},
			wantOut:    "$ ls\r\nbin\r\n",
			wantErrOut: "[following s1 as it is recorded]\n[recording ended and verified: its signed manifest describes every chunk followed]\n[1 control sequences"},
		{name: "raw", args: []string{"--raw"},
			answers:    [][]string{{header, `[1.2, "o", "bin\u001b]52;c;eA==\u0007"]`, `[2.0, "m", "recording ended and verified"]`}},
			wantOut:    "bin\x1b]52;c;eA==\x07",
			wantErrOut: "[following s1 as it is recorded]\n[recording ended and verified]\n"},
		{name: "json", args: []string{"-o", "json"},
			answers: [][]string{{header, `[0.1, "o", "x"]`, `[2.0, "m", "recording ended and verified"]`}},
			wantOut: header + "\n" + `[0.1, "o", "x"]` + "\n" + `[2.0, "m", "recording ended and verified"]` + "\n"},
		{name: "manifest not signed",
			answers: [][]string{{header, `[0.1, "o", "x"]`, `[2.0, "m", "follow ended: sre/fix/u/streams/s1/: the recording is not what was written: its manifest: it is not signed"]`}},
			wantOut: "x", wantErr: "it is not signed"},
		{name: "cut again at once", answers: [][]string{{header}}, wantErrOut: "[following s1", wantErr: "the follow ended before its end"},
		{name: "refused", status: http.StatusServiceUnavailable, wantErr: "needs the S3 store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAPI(t)
			var asked atomic.Int32
			a.Config.Handler.(*http.ServeMux).HandleFunc(recordingsPath+"/streams/s1", func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("follow") != "true" {
					t.Errorf("asked %s", r.URL)
				}
				if tt.status != 0 {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"stream s1 is recorded by replica a: following needs the S3 store","reason":"ServiceUnavailable","code":503}`))
					return
				}
				answer := tt.answers[min(int(asked.Add(1))-1, len(tt.answers)-1)]
				sendLines(w, answer...)
				if len(answer) == 0 || !strings.Contains(answer[len(answer)-1], `"m", `) {
					panic(http.ErrAbortHandler)
				}
			})
			out, errOut, err := a.runFor(10*time.Second, append([]string{"replay", "fix", "s1", "--follow"}, tt.args...)...)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ended with %v, want %q (%s)", err, tt.wantErr, errOut)
			}
			if out != tt.wantOut || !strings.HasPrefix(errOut, tt.wantErrOut) {
				t.Errorf("output %q, error output %q; want %q, %q", out, errOut, tt.wantOut, tt.wantErrOut)
			}
		})
	}
}

// TestHistoryFollow: history --follow shows each entry as the server
// sends it, the table's headers once, until it is stopped.
func TestHistoryFollow(t *testing.T) {
	a := newFakeAPI(t)
	a.Config.Handler.(*http.ServeMux).HandleFunc(recordingsPath+"/requests", func(w http.ResponseWriter, r *http.Request) {
		sendLines(w, `{"time":"2026-12-03T09:00:00Z","method":"GET","path":"/api/v1/pods","status":200}`,
			`{"time":"2026-12-03T09:00:02Z","method":"POST","path":"/api/v1/namespaces/x/pods/p/exec","status":101,"stream":"s1"}`)
		<-r.Context().Done()
	})
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "table", want: []string{"TIME ", "/api/v1/pods ", "/api/v1/namespaces/x/pods/p/exec ", "s1"}},
		{name: "json", args: []string{"-o", "json"}, want: []string{`{"time":"2026-12-03T09:00:00Z"`, `"stream":"s1"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := a.runFor(time.Second, append([]string{"history", "fix", "--follow"}, tt.args...)...)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("ended with %v before it was stopped", err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(tt.want) && len(lines)+1 != len(tt.want) {
				t.Errorf("%d lines:\n%s", len(lines), out)
			}
			for _, w := range tt.want {
				if strings.Count(out, w) != 1 {
					t.Errorf("%q shown %d times in:\n%s", w, strings.Count(out, w), out)
				}
			}
		})
	}
}

// TestWatch: watch follows the request log and every stream that is live
// or opens, each line after its stream, and leaves out those over before
// it started.
func TestWatch(t *testing.T) {
	a := newFakeAPI(t)
	a.recorded.Store(&map[string]string{"": mustJSON(t, map[string]any{"items": []v1alpha1.SessionRecording{
		{RecordingInfo: v1alpha1.RecordingInfo{Stream: "s0", Subresource: "exec"}, Manifest: &v1alpha1.RecordingManifest{Stream: "s0"}},
		{RecordingInfo: v1alpha1.RecordingInfo{Stream: "s1", Subresource: "exec", PodNamespace: "default", Pod: "shell", Command: []string{"sh"}}},
	}})})
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc(recordingsPath+"/requests", func(w http.ResponseWriter, r *http.Request) {
		sendLines(w, `{"time":"2026-12-03T09:00:00Z","method":"POST","path":"/api/v1/namespaces/default/pods/shell/exec","status":101,"stream":"s1"}`)
		<-r.Context().Done()
	})
	mux.HandleFunc(recordingsPath+"/streams/s1", func(w http.ResponseWriter, r *http.Request) {
		sendLines(w, `{"version":2,"clustergate":{"stream":"s1","tty":true},"clustergateVerification":"live"}`,
			`[0.1, "o", "$ echo hi\r\nhi\r\n\u001b[1A$ "]`, `[0.5, "m", "recording ended and verified"]`)
	})
	mux.HandleFunc(recordingsPath+"/streams/s0", func(w http.ResponseWriter, r *http.Request) {
		t.Error("followed a stream over before the watch")
	})
	out, _, err := a.runFor(time.Second, "watch", "fix")
	if err != nil {
		t.Errorf("ended with %v", err)
	}
	for _, want := range []string{
		"requests 2026-12-03T09:00:00Z POST /api/v1/namespaces/default/pods/shell/exec 101 s1\n",
		"[s1] [exec default/shell sh]\n", "[s1] [following s1 as it is recorded]\n", "[s1] $ echo hi\n", "[s1] hi\n",
		"[s1] [recording ended and verified]\n", "[s1] ^[[1A$ \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
