// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"sync"
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// terminalAttach is the client's side of an exec -t.
type terminalAttach struct {
	stdin  io.Reader
	stdout io.WriteCloser
	resize chan api.TermSize
}

func (a terminalAttach) TTY() bool                   { return true }
func (a terminalAttach) Stdin() io.Reader            { return a.stdin }
func (a terminalAttach) Stdout() io.WriteCloser      { return a.stdout }
func (a terminalAttach) Stderr() io.WriteCloser      { return nil }
func (a terminalAttach) Resize() <-chan api.TermSize { return a.resize }

// screen collects what the terminal writes.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) Close() error { return nil }

// TestRunOnTerminal: the command gets a terminal that echoes what is typed
// and has the window size the client sent.
func TestRunOnTerminal(t *testing.T) {
	typed, typing := io.Pipe()
	out := &screen{}
	attach := terminalAttach{stdin: typed, stdout: out, resize: make(chan api.TermSize)}
	ended := make(chan error, 1)
	go func() {
		ended <- runOnTerminal(context.Background(), exec.Command("sh", "-c", "read line; stty size"), attach)
	}()
	// The second size is taken only once the first one is set.
	for range 2 {
		attach.resize <- api.TermSize{Width: 100, Height: 30}
	}
	_, _ = io.WriteString(typing, "go\r")
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if got, want := out.buf.String(), "go\r\n30 100\r\n"; got != want {
		t.Errorf("the terminal showed %q, want %q", got, want)
	}
}
