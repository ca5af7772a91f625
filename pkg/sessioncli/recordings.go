// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/recording"
)

// readRecordings reads what sessions/NAME/recordings/PATH... answers to
// a query of params.
func (g *globals) readRecordings(ctx context.Context, name string, params map[string]string, path ...string) ([]byte, error) {
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
	body, err := req.DoRaw(ctx)
	if err != nil {
		// The clientset's decoder does not take the Status of a raw
		// answer: read it here, so that a refusal says why.
		var status metav1.Status
		if json.Unmarshal(body, &status) == nil && status.Kind == "Status" && status.Message != "" {
			return nil, &apierrors.StatusError{ErrStatus: status}
		}
		return nil, err
	}
	return body, nil
}

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
		Args:  cobra.ExactArgs(1),
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
			var list struct{ Items []recording.StreamSummary }
			if err := json.Unmarshal(data, &list); err != nil {
				return err
			}
			return printStreams(g.streams.Out, list.Items)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func printStreams(out io.Writer, streams []recording.StreamSummary) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "STREAM\tKIND\tPOD\tCONTAINER\tCOMMAND\tWAY\tSTARTED\tDURATION\tBYTES\tSTATE")
	for _, s := range streams {
		duration, state := "-", "recording or cut off"
		if m := s.Manifest; m != nil {
			duration, state = m.EndTime.Sub(s.StartTime).Round(time.Second).String(), "complete sha256:"+m.CaptureSHA256[:min(12, len(m.CaptureSHA256))]
			if m.Failed != "" {
				state = "incomplete: " + m.Failed
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Stream, s.Subresource, s.PodNamespace, s.Pod, orNone(s.Container),
			orNone(strings.Join(s.Command, " ")), s.Way, s.StartTime.UTC().Format(time.RFC3339), duration, s.Bytes, state)
	}
	return w.Flush()
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
func (g *globals) readRequestLog(ctx context.Context, name string) ([]recording.Request, error) {
	var all []recording.Request
	next := ""
	for {
		var page struct {
			Items    []recording.Request
			Metadata metav1.ListMeta
		}
		data, err := g.readRecordings(ctx, name, map[string]string{"limit": strconv.Itoa(historyPage), "continue": next}, "requests")
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("reading the request log: %w", err)
		}
		all = append(all, page.Items...)
		if next = page.Metadata.Continue; next == "" {
			break
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all, nil
}

func newHistoryCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history NAME [-o json]",
		Short: "Show the request log of a session, every request through it from either way in (needs get on sessions/recordings)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			log, err := g.readRequestLog(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				if log == nil {
					log = []recording.Request{}
				}
				// The list as the server answered before it paged.
				return json.NewEncoder(g.streams.Out).Encode(map[string]any{"kind": "SessionRequestLog", "apiVersion": "clustergate.dev/v1alpha1", "items": log})
			}
			return printHistory(g.streams.Out, log)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// printHistory prints a request log as a table; an entry that was cut, or
// one that records lost entries, says so in its path.
func printHistory(out io.Writer, log []recording.Request) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tWAY\tMETHOD\tPATH\tSTATUS\tIN\tOUT\tDURATION\tSTREAM")
	for _, r := range log {
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
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339), orNone(r.Way), orNone(r.Method), path, r.Status,
			r.BytesIn, r.BytesOut, r.Duration, orNone(r.Stream))
	}
	return w.Flush()
}

func newReplayCommand(g *globals) *cobra.Command {
	var output string
	var speed float64
	var unverified bool
	cmd := &cobra.Command{
		Use:   "replay NAME STREAM [--speed N] [--unverified] [-o json]",
		Short: "Play a recorded stream in the terminal with its recorded timing (-o json: the asciicast v2 file, for asciinema)",
		Long: `Plays what the stream's target wrote, with the recorded pauses divided by --speed
(0: no pauses). What the user typed is played too for streams without a terminal
(kubectl exec -i), where nothing echoes it; with a terminal (-t) the echo shows it.
Standard error is played as output, as a terminal shows it; how the command ended
goes to standard error. The server refuses a recording its writer does not vouch
for (changed in the store, or finished without a valid signed manifest);
--unverified plays it anyway, saying on standard error why it is not verified.`,
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
			data, err := g.readRecordings(cmd.Context(), args[0], params, "streams", args[1])
			if err != nil {
				return err
			}
			if output == "json" {
				_, err := g.streams.Out.Write(data)
				return err
			}
			return replay(cmd.Context(), data, speed, g.streams.Out, g.streams.ErrOut)
		},
	}
	cmd.Flags().Float64Var(&speed, "speed", 1, "How many times faster than recorded; 0 plays without pauses.")
	cmd.Flags().BoolVar(&unverified, "unverified", false,
		"Play a recording the server cannot verify (its header and standard error say why), e.g. one whose replica died before it finished.")
	outputFlag(cmd, &output)
	return cmd
}

// replay plays an asciicast v2 recording.
func replay(ctx context.Context, cast []byte, speed float64, out, errOut io.Writer) error {
	scanner := bufio.NewScanner(bytes.NewReader(cast))
	scanner.Buffer(nil, 16<<20)
	if !scanner.Scan() {
		return fmt.Errorf("the recording is empty")
	}
	var header struct {
		Version                 int
		Clustergate             recording.StreamInfo
		ClustergateVerification string
	}
	if err := json.Unmarshal(scanner.Bytes(), &header); err != nil || header.Version != 2 {
		return fmt.Errorf("not an asciicast v2 recording")
	}
	if v := header.ClustergateVerification; v != "" && v != recording.Verified {
		fmt.Fprintf(errOut, "Warning: this recording is %s\n", v)
	}
	last := 0.0
	for scanner.Scan() {
		var e []any
		if json.Unmarshal(scanner.Bytes(), &e) != nil || len(e) != 3 {
			continue
		}
		at, _ := e[0].(float64)
		kind, _ := e[1].(string)
		data, _ := e[2].(string)
		if speed > 0 && at > last {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration((at - last) / speed * float64(time.Second))):
			}
		}
		last = at
		switch {
		case kind == "o", kind == "i" && !header.Clustergate.TTY:
			if _, err := io.WriteString(out, data); err != nil {
				return err
			}
		case kind == "m":
			fmt.Fprintf(errOut, "[%s]\n", data)
		}
	}
	return scanner.Err()
}
