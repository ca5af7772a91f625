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
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Markers of a followed recording's end: the server writes them, after
// the recorded events, as the follow ends. A recorded stream's own
// markers start with "exit: " or "error: ", never with these.
const (
	endedMarker       = "recording ended"
	followEndedMarker = "follow ended: "
)

// followRetry is how long a follow waits before it asks again for an
// answer cut before its end; followMinRun is how long an answer must have
// run, or how many new lines it must have brought, to be asked for again.
const (
	followRetry  = time.Second
	followMinRun = 10 * time.Second
)

// followLines hands each line that sessions/NAME/recordings/PATH with
// ?follow=true sends to each, until each says that it was the last or
// ctx ends. kube-apiserver cuts a request to an aggregated API that it
// does not take for long-running at its request timeout (60 s by
// default), whatever clustergate decides, so an answer that ends before
// its last line is asked for again and the lines already handed are
// skipped: the server sends the same lines from the start each time. One
// that ends at once without a new line is an error.
func (g *globals) followLines(ctx context.Context, name string, params map[string]string, each func(line []byte) (last bool, err error), path ...string) error {
	params = maps.Clone(params)
	if params == nil {
		params = map[string]string{}
	}
	params["follow"] = "true"
	handed := 0
	for {
		req, err := g.recordingsRequest(name, params, path...)
		if err != nil {
			return err
		}
		opened := time.Now()
		body, err := req.Stream(ctx)
		if err != nil {
			return err
		}
		before := handed
		scanner := bufio.NewScanner(body)
		scanner.Buffer(nil, 16<<20)
		for n := 0; scanner.Scan(); {
			if n++; n <= handed {
				continue
			}
			handed++
			if last, err := each(scanner.Bytes()); last || err != nil {
				_ = body.Close()
				return err
			}
		}
		_ = body.Close()
		cut := scanner.Err()
		if cut == nil {
			cut = io.ErrUnexpectedEOF
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case handed == before && time.Since(opened) < followMinRun:
			return fmt.Errorf("the follow ended before its end: %w", cut)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followRetry):
		}
	}
}

// followCast plays a live stream as it is recorded, each event to p once
// the header was read, until the server says that it ended.
func (g *globals) followCast(ctx context.Context, name, stream string, params map[string]string, p *player, raw func(line []byte) error) error {
	headerRead := false
	return g.followLines(ctx, name, params, func(line []byte) (bool, error) {
		if raw != nil {
			if err := raw(line); err != nil {
				return false, err
			}
		}
		if !headerRead {
			headerRead = true
			return false, p.header(line)
		}
		kind, data, err := p.event(ctx, line)
		switch {
		case err != nil:
			return false, err
		case kind != "m":
			return false, nil
		case strings.HasPrefix(data, endedMarker):
			return true, nil
		case strings.HasPrefix(data, followEndedMarker):
			return true, errors.New(strings.TrimPrefix(data, followEndedMarker))
		}
		return false, nil
	}, "streams", stream)
}

// followRequests hands each entry of the request log, then each one as it
// is stored, to each, until ctx ends.
func (g *globals) followRequests(ctx context.Context, name string, each func(line []byte, r *v1alpha1.RequestLogEntry) error) error {
	return g.followLines(ctx, name, nil, func(line []byte) (bool, error) {
		var r v1alpha1.RequestLogEntry
		if err := json.Unmarshal(line, &r); err != nil {
			return false, fmt.Errorf("reading the request log: %w", err)
		}
		return false, each(line, &r)
	}, "requests")
}

// printRequestRows prints requests as rows of the history's table, its
// headers with the first.
func printRequestRows(out io.Writer, requests []v1alpha1.RequestLogEntry, headers bool) error {
	table := requestTable(requests)
	return printers.NewTablePrinter(printers.PrintOptions{NoHeaders: !headers}).PrintObj(table, out)
}

// watchPoll is how often kubectl session watch lists the session's streams
// for new ones.
const watchPoll = 2 * time.Second

func newWatchCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "watch NAME",
		Short: "Follow a session as it happens: its request log and every exec and attach stream as it opens (needs get on sessions/recordings)",
		Long: `Follows a session as it happens: the request log from its start, then each entry as
it is recorded (lines starting with "requests"), and every exec and attach stream
that is live or opens while it runs, each line of its output after the stream's
ID in brackets. Lines are shown escaped, as the tables show a cell, so that the
output of one stream can not move or erase another's. Ctrl-C stops.

A stream's output reaches you within the server's flush interval (2 s by
default) of being written. Follow one stream in its own terminal, as drawn, with
kubectl session replay NAME STREAM --follow.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.watch(cmd.Context(), args[0], nil)
		},
	}
}

// watch follows the request log and every stream of the session that is
// live or opens, each stream with params, until ctx ends.
func (g *globals) watch(ctx context.Context, name string, params map[string]string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &lockedWriter{w: g.streams.Out}
	var wg sync.WaitGroup
	defer wg.Wait()
	follow := func(what string, run func() error) {
		wg.Go(func() {
			if err := run(); err != nil && ctx.Err() == nil {
				fmt.Fprintf(out, "[%s] [%s]\n", what, escapeLine(err.Error()))
			}
		})
	}
	follow("requests", func() error {
		return g.followRequests(ctx, name, func(_ []byte, r *v1alpha1.RequestLogEntry) error {
			path := r.Path
			if r.Query != "" {
				path += "?" + r.Query
			}
			_, err := fmt.Fprintf(out, "requests %s %s %s %d %s\n", r.Time.UTC().Format(time.RFC3339), escapeLine(r.Method),
				escapeLine(path), r.Status, escapeLine(orNone(r.Stream)))
			return err
		})
	})
	var finished map[string]bool
	followed := map[string]bool{}
	for {
		data, err := g.readRecordings(ctx, name, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var list v1alpha1.SessionRecordingList
		if err := json.Unmarshal(data, &list); err != nil {
			return err
		}
		first := finished == nil
		if first {
			finished = map[string]bool{}
		}
		for _, s := range list.Items {
			switch {
			case first && s.Manifest != nil:
				// Over before the watch: recordings and replay show it.
				finished[s.Stream] = true
			case finished[s.Stream] || followed[s.Stream]:
			default:
				followed[s.Stream] = true
				// Output and what the server says have lines of their own.
				lines := &prefixWriter{prefix: "[" + escapeLine(s.Stream) + "] ", out: out}
				said := &prefixWriter{prefix: lines.prefix, out: out}
				fmt.Fprintf(out, "[%s] [%s %s/%s %s]\n", escapeLine(s.Stream), s.Subresource, escapeLine(s.PodNamespace), escapeLine(s.Pod),
					escapeLine(strings.Join(s.Command, " ")))
				p := &player{out: lines, errOut: said, following: true}
				follow(s.Stream, func() error {
					defer lines.Flush()
					return g.followCast(ctx, name, s.Stream, params, p, nil)
				})
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchPoll):
		}
	}
}

// lockedWriter writes for several goroutines, one write at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixWriter writes each line written to it after prefix, escaped, in
// one write: the lines of streams watched together stay whole and say
// whose they are.
type prefixWriter struct {
	prefix  string
	out     io.Writer
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := p.line(p.partial[:i]); err != nil {
			return 0, err
		}
		p.partial = p.partial[i+1:]
	}
}

// Flush writes what is left of the last line.
func (p *prefixWriter) Flush() {
	if len(p.partial) > 0 {
		_ = p.line(p.partial)
		p.partial = nil
	}
}

func (p *prefixWriter) line(b []byte) error {
	_, err := io.WriteString(p.out, p.prefix+escapeLine(strings.TrimRight(string(b), "\r"))+"\n")
	return err
}
