// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"io"
	"testing"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// TestRunOnTerminal types a line and Ctrl-D into cat on a terminal: the
// terminal echoes the line with a carriage return, cat writes it back, and
// Ctrl-D ends its input.
func TestRunOnTerminal(t *testing.T) {
	typed, typing := io.Pipe()
	go func() {
		_, _ = io.WriteString(typing, "hello\r")
		_, _ = io.WriteString(typing, "\x04")
	}()
	resize := make(chan remotecommand.TerminalSize, 1)
	resize <- remotecommand.TerminalSize{Width: 100, Height: 30}
	close(resize)
	var out bytes.Buffer
	if err := runOnTerminal([]string{"cat"}, typed, &out, resize); err != nil {
		t.Fatal(err)
	}
	if want := "hello\r\nhello\r\n"; out.String() != want {
		t.Errorf("the terminal showed %q, want %q", out.String(), want)
	}
}
