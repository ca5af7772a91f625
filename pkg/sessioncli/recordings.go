// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// readRecordings reads what sessions/NAME/recordings/PATH... answers to
// a query of params.
func (g *globals) readRecordings(ctx context.Context, name string, params map[string]string, path ...string) ([]byte, error) {
	req, err := g.recordingsRequest(name, params, path...)
	if err != nil {
		return nil, err
	}
	return doRaw(ctx, req)
}

// doRaw sends req and returns the answer's body, or, for a refusal, the
// server's Status as the error: the clientset's decoder does not take the
// Status of a raw answer, and kubectl would print "unknown" instead of
// the server's message.
func doRaw(ctx context.Context, req *rest.Request) ([]byte, error) {
	body, err := req.DoRaw(ctx)
	if err != nil {
		var status metav1.Status
		if json.Unmarshal(body, &status) == nil && status.Kind == "Status" && status.Message != "" {
			return nil, &apierrors.StatusError{ErrStatus: status}
		}
		return nil, err
	}
	return body, nil
}

// recordingsRequest is a GET of sessions/NAME/recordings/PATH... with
// params.
func (g *globals) recordingsRequest(name string, params map[string]string, path ...string) (*rest.Request, error) {
	ns, err := g.namespace()
	if err != nil {
		return nil, err
	}
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	req := c.ClustergateV1alpha1().RESTClient().Get().Namespace(ns).Resource("sessions").Name(name).
		SubResource(append([]string{"recordings"}, path...)...)
	for k, v := range params {
		if v != "" {
			req = req.Param(k, v)
		}
	}
	return req, nil
}

// escapedHelp says how the tables of recordings and history show what the
// session's owner chose.
const escapedHelp = `Paths, queries, pods, containers and commands are the session owner's to choose:
the table shows each as kubectl shows a cell, cut at a line break with "...", ESC
as ^[, a carriage return as \r and other control characters in caret notation
(^H, ^I, ^[[ for a C1 CSI), so that none can add, move or erase rows. -o json
shows them as recorded.`

// outputFlag adds -o, which takes json or nothing (a table).
func outputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "", "json, or empty for a table.")
}

func checkOutput(output string) error {
	if output != "" && output != "json" {
		return fmt.Errorf("unknown output format %q: json or none", output)
	}
	return nil
}

func newRecordingsCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "recordings NAME [-o json]",
		Short: "List the recorded exec and attach streams of a session, also of one deleted (needs get on sessions/recordings)",
		Long: `Lists the recorded exec and attach streams of a session, also of one deleted.

` + escapedHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			data, err := g.readRecordings(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			if output == "json" {
				_, err := g.streams.Out.Write(data)
				return err
			}
			var list v1alpha1.SessionRecordingList
			if err := json.Unmarshal(data, &list); err != nil {
				return err
			}
			return printStreams(g.streams.Out, g.streams.ErrOut, list.Items)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// printStreams prints a table of recorded streams.
func printStreams(out, errOut io.Writer, streams []v1alpha1.SessionRecording) error {
	rows := make([][]any, 0, len(streams))
	for _, s := range streams {
		duration, state := "-", "recording or cut off"
		if m := s.Manifest; m != nil {
			duration, state = m.EndTime.Sub(s.StartTime).Round(time.Second).String(), "complete sha256:"+m.CaptureSHA256[:min(12, len(m.CaptureSHA256))]
			if m.Failed != "" {
				state = "incomplete: " + m.Failed
			}
		}
		rows = append(rows, []any{s.Stream, s.Subresource, s.PodNamespace + "/" + s.Pod, orNone(s.Container),
			orNone(strings.Join(s.Command, " ")), s.Way, s.StartTime.UTC().Format(time.RFC3339), duration, s.Bytes, state})
	}
	return printRows(out, errOut, "recorded streams",
		[]string{"Stream", "Kind", "Pod", "Container", "Command", "Way", "Started", "Duration", "Bytes", "State"}, rows)
}

// printRequests prints a table of a request log; an entry that was cut,
// or one that records lost entries, says so in its path.
func printRequests(out, errOut io.Writer, requests []v1alpha1.RequestLogEntry) error {
	if len(requests) == 0 {
		_, err := fmt.Fprintf(errOut, "No requests found.\n")
		return err
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(requestTable(requests), out)
}

// requestTable is the table of a request log, its cells escaped.
func requestTable(requests []v1alpha1.RequestLogEntry) *metav1.Table {
	rows := make([][]any, 0, len(requests))
	for _, r := range requests {
		path := r.Path
		if r.Query != "" {
			path += "?" + r.Query
		}
		if len(r.Truncated) > 0 {
			path += " (truncated)"
		}
		if r.Lost > 0 {
			path = "(" + r.CloseReason + ")"
		}
		rows = append(rows, []any{r.Time.UTC().Format(time.RFC3339), r.Way, r.Method, path, r.Status,
			r.BytesIn, r.BytesOut, r.Duration, orNone(r.Stream)})
	}
	return newTable([]string{"Time", "Way", "Method", "Path", "Status", "In", "Out", "Duration", "Stream"}, rows)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// historyPage is how many entries of a request log each request reads.
const historyPage = 500

// readRequestLog reads a session's whole request log, page by page, by
// time; the server holds no more than a page and a chunk of it at a time.
func (g *globals) readRequestLog(ctx context.Context, name string) ([]v1alpha1.RequestLogEntry, error) {
	var all []v1alpha1.RequestLogEntry
	next := ""
	for {
		var page v1alpha1.SessionRequestLog
		data, err := g.readRecordings(ctx, name, map[string]string{"limit": strconv.Itoa(historyPage), "continue": next}, "requests")
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("reading the request log: %w", err)
		}
		all = append(all, page.Items...)
		if next = page.Continue; next == "" {
			break
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all, nil
}

func newHistoryCommand(g *globals) *cobra.Command {
	var output string
	var follow bool
	cmd := &cobra.Command{
		Use:   "history NAME [-o json] [--follow]",
		Short: "Show the request log of a session, every request through it from either way in (needs get on sessions/recordings)",
		Long: `Shows the request log of a session, every request through it from either way in.
--follow keeps showing each request as it is recorded (within the server's flush
interval, 2 s by default) until Ctrl-C; with -o json, one JSON entry a line.

` + escapedHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if follow {
				first := true
				return g.followRequests(cmd.Context(), args[0], func(line []byte, r *v1alpha1.RequestLogEntry) error {
					if output == "json" {
						_, err := g.streams.Out.Write(append(line, '\n'))
						return err
					}
					headers := first
					first = false
					return printRequestRows(g.streams.Out, []v1alpha1.RequestLogEntry{*r}, headers)
				})
			}
			log, err := g.readRequestLog(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				if log == nil {
					log = []v1alpha1.RequestLogEntry{}
				}
				// The list as the server answered before it paged.
				return json.NewEncoder(g.streams.Out).Encode(map[string]any{"kind": "SessionRequestLog", "apiVersion": "clustergate.dev/v1alpha1", "items": log})
			}
			return printRequests(g.streams.Out, g.streams.ErrOut, log)
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "Keep showing each request as it is recorded, until Ctrl-C.")
	return cmd
}

func newReplayCommand(g *globals) *cobra.Command {
	var output string
	var speed float64
	var unverified, raw, follow bool
	cmd := &cobra.Command{
		Use:   "replay NAME STREAM [--speed N] [--unverified] [--raw] [-o json] [--follow]",
		Short: "Play a recorded stream in the terminal with its recorded timing (-o json: the asciicast v2 file, for asciinema)",
		Long: `Plays what the stream's target wrote, with the recorded pauses divided by --speed
(0: no pauses). What the user typed is played too for streams without a terminal
(kubectl exec -i), where nothing echoes it; with a terminal (-t) the echo shows it.
Standard error is played as output, as a terminal shows it; how the command ended
goes to standard error. The server refuses a recording its writer does not vouch
for (changed in the store, or finished without a valid signed manifest);
--unverified plays it anyway, saying on standard error why it is not verified.

What was recorded is the owner's to choose: the replay draws what the owner's
terminal drew (text, colours, cursor movement, erasing, scrolling, the alternate
screen) but leaves out the control sequences that would act on your terminal
instead: every OSC (clipboard, title, hyperlinks, notifications), DCS, APC, PM
and SOS string (sixel images included), requests for reports (device status and
attributes, modes, window size), window operations, mouse and focus reporting,
keyboard modes, the answerback (ENQ), their 8-bit C1 forms, and anything
malformed. Standard error says how many were left out. --raw plays every byte as
recorded; -o json is the recording itself, unchanged.

--follow plays a stream that is still recorded as it happens: each write of the
target appears within the server's flush interval (2 s by default), until the
stream ends; standard error then says that the server verified the whole
recording against its signed manifest, or why it could not (an error). A stream
that already ended plays as without --follow, without pauses.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if speed < 0 {
				return fmt.Errorf("--speed may not be negative")
			}
			var params map[string]string
			if unverified {
				params = map[string]string{"unverified": "true"}
			}
			if follow {
				return g.replayFollowing(cmd.Context(), args[0], args[1], params, output, raw)
			}
			data, err := g.readRecordings(cmd.Context(), args[0], params, "streams", args[1])
			if err != nil {
				return err
			}
			if output == "json" {
				_, err := g.streams.Out.Write(data)
				return err
			}
			if raw {
				return replay(cmd.Context(), bytes.NewReader(data), speed, g.streams.Out, g.streams.ErrOut)
			}
			filter := newTermFilter(g.streams.Out)
			err = errors.Join(replay(cmd.Context(), bytes.NewReader(data), speed, filter, g.streams.ErrOut), filter.Close())
			if n := filter.Dropped(); n > 0 {
				fmt.Fprintf(g.streams.ErrOut, "[%d control sequences that act on the terminal rather than draw left out; --raw plays them]\n", n)
			}
			return err
		},
	}
	cmd.Flags().Float64Var(&speed, "speed", 1, "How many times faster than recorded; 0 plays without pauses.")
	cmd.Flags().BoolVar(&unverified, "unverified", false,
		"Play a recording the server cannot verify (its header and standard error say why), e.g. one whose replica died before it finished.")
	cmd.Flags().BoolVar(&raw, "raw", false, "Play every byte as recorded, control sequences that act on your terminal included.")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "Play a live stream as it happens, until it ends.")
	outputFlag(cmd, &output)
	return cmd
}

// replayFollowing plays a stream as it is recorded: through the terminal
// filter unless raw, or as the asciicast's lines with -o json.
func (g *globals) replayFollowing(ctx context.Context, name, stream string, params map[string]string, output string, raw bool) error {
	p := &player{out: g.streams.Out, errOut: g.streams.ErrOut, following: true}
	if output == "json" {
		p.out, p.errOut = io.Discard, io.Discard
		return g.followCast(ctx, name, stream, params, p, func(line []byte) error {
			_, err := g.streams.Out.Write(append(line, '\n'))
			return err
		})
	}
	if raw {
		return g.followCast(ctx, name, stream, params, p, nil)
	}
	filter := newTermFilter(g.streams.Out)
	p.out = filter
	err := errors.Join(g.followCast(ctx, name, stream, params, p, nil), filter.Close())
	if n := filter.Dropped(); n > 0 {
		fmt.Fprintf(g.streams.ErrOut, "[%d control sequences that act on the terminal rather than draw left out; --raw plays them]\n", n)
	}
	return err
}

// replay plays an asciicast v2 recording: output (and input without a
// terminal) to out, how the command ended to errOut, escaped.
func replay(ctx context.Context, cast io.Reader, speed float64, out, errOut io.Writer) error {
	scanner := bufio.NewScanner(cast)
	scanner.Buffer(nil, 16<<20)
	if !scanner.Scan() {
		return fmt.Errorf("the recording is empty")
	}
	p := &player{speed: speed, out: out, errOut: errOut}
	if err := p.header(scanner.Bytes()); err != nil {
		return err
	}
	for scanner.Scan() {
		if _, _, err := p.event(ctx, scanner.Bytes()); err != nil {
			return err
		}
	}
	return scanner.Err()
}

// player plays the lines of an asciicast v2 recording, header first.
type player struct {
	speed       float64
	out, errOut io.Writer
	// following says that the recording is played as it is recorded: a
	// live one is expected.
	following bool
	tty       bool
	last      float64
}

// header reads the recording's header and says on errOut when it is not
// verified.
func (p *player) header(line []byte) error {
	var header struct {
		Version                 int
		Clustergate             v1alpha1.RecordingInfo
		ClustergateVerification string
	}
	if err := json.Unmarshal(line, &header); err != nil || header.Version != 2 {
		return fmt.Errorf("not an asciicast v2 recording")
	}
	p.tty = header.Clustergate.TTY
	switch v := header.ClustergateVerification; {
	case p.following && v == v1alpha1.RecordingLive:
		fmt.Fprintf(p.errOut, "[following %s as it is recorded]\n", escapeLine(header.Clustergate.Stream))
	case v != "" && v != v1alpha1.RecordingVerified:
		fmt.Fprintf(p.errOut, "Warning: this recording is %s\n", v)
	}
	return nil
}

// event plays an event line after the recorded pause divided by speed,
// and returns its kind and data; a line that is no event is skipped.
func (p *player) event(ctx context.Context, line []byte) (kind, data string, err error) {
	var e []any
	if json.Unmarshal(line, &e) != nil || len(e) != 3 {
		return "", "", nil //nolint:nilerr // a line that is no event is skipped, as players do
	}
	at, _ := e[0].(float64)
	kind, _ = e[1].(string)
	data, _ = e[2].(string)
	if p.speed > 0 && at > p.last {
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(time.Duration((at - p.last) / p.speed * float64(time.Second))):
		}
	}
	p.last = at
	switch {
	case kind == "o", kind == "i" && !p.tty:
		if _, err := io.WriteString(p.out, data); err != nil {
			return "", "", err
		}
	case kind == "m":
		fmt.Fprintf(p.errOut, "[%s]\n", escapeLine(data))
	}
	return kind, data, nil
}
