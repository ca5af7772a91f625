// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runbook reads the code blocks of a runbook in the docs, so that
// tests run the commands and manifests a runbook shows rather than copies
// of them that could drift.
package runbook

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Block is the first fenced code block after the first line that holds
// marker, in the section of the Markdown doc that starts with the heading
// line section and ends at the next heading of level 3 or higher. The
// indentation of the block's fence (a block inside a list item) is taken
// off each of its lines.
func Block(doc []byte, section, marker string) (string, error) {
	var (
		inSection, marked, inBlock bool
		indent                     string
		block                      strings.Builder
	)
	for s := bufio.NewScanner(bytes.NewReader(doc)); s.Scan(); {
		line := s.Text()
		switch {
		case inBlock:
			if strings.TrimSpace(line) == "```" {
				return block.String(), nil
			}
			block.WriteString(strings.TrimPrefix(line, indent) + "\n")
		case line == section:
			inSection = true
		case inSection && strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "####"):
			inSection = false
		case inSection && strings.Contains(line, marker):
			marked = true
		case inSection && marked && strings.HasPrefix(strings.TrimSpace(line), "```"):
			inBlock, indent = true, line[:len(line)-len(strings.TrimLeft(line, " "))]
		}
	}
	return "", fmt.Errorf("%q: no code block after %q", section, marker)
}

// notRunMarker starts the HTML comment that marks the next code block as
// one a test cannot run (a real cluster's install, say); the rest of the
// comment says why.
const notRunMarker = "<!-- not run:"

// CodeBlock is a fenced code block of a Markdown doc.
type CodeBlock struct {
	// Text is the block's content, each line ending in a newline.
	Text string
	// NotRun is why the block cannot run in a test, from the
	// `<!-- not run: why -->` line right before its fence; empty for the
	// others.
	NotRun string
}

// Blocks are the doc's top-level code blocks fenced as ```lang, in order.
func Blocks(doc []byte, lang string) []CodeBlock {
	var (
		blocks         []CodeBlock
		current        *CodeBlock
		inOther        bool
		notRun, before string
	)
	for s := bufio.NewScanner(bytes.NewReader(doc)); s.Scan(); before = s.Text() {
		line := s.Text()
		switch {
		case current != nil:
			if line == "```" {
				blocks, current = append(blocks, *current), nil
				continue
			}
			current.Text += line + "\n"
		case inOther:
			inOther = line != "```"
		case line == "```"+lang:
			notRun = ""
			if why, ok := strings.CutPrefix(before, notRunMarker); ok {
				notRun = strings.TrimSpace(strings.TrimSuffix(why, "-->"))
			}
			current = &CodeBlock{NotRun: notRun}
		case strings.HasPrefix(line, "```"):
			inOther = true
		}
	}
	return blocks
}

// Line is one command of a shell block and the comment after it.
type Line struct {
	Command, Comment string
}

// Lines are the commands of a shell block, each with its comment; lines
// that are only a comment are left out, and a line that ends in a
// backslash goes on in the next.
func Lines(block string) []Line {
	var lines []Line
	command := ""
	for _, text := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if cont, ok := strings.CutSuffix(text, "\\"); ok {
			command += cont
			continue
		}
		command += text
		code, comment := splitComment(command)
		command = ""
		if code = strings.TrimSpace(code); code != "" {
			lines = append(lines, Line{Command: code, Comment: comment})
		}
	}
	return lines
}

// splitComment cuts a shell line at its comment: a # outside quotes at
// the start of a word, as bash reads it.
func splitComment(line string) (code, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], strings.TrimSpace(line[i+1:])
		}
	}
	return line, ""
}

// refusals are the words by which a comment says that its command fails.
var refusals = []string{"403", "refused", "forbidden", "error"}

// Refused says whether a comment promises that its command fails: it
// names a 403, a refusal, Forbidden or an error.
func (l Line) Refused() bool {
	comment := strings.ToLower(l.Comment)
	for _, word := range refusals {
		if strings.Contains(comment, word) {
			return true
		}
	}
	return false
}

// Says are the texts in backquotes in the comment, which the command's
// output must contain.
func (l Line) Says() []string {
	var says []string
	parts := strings.Split(l.Comment, "`")
	for i := 1; i < len(parts)-1; i += 2 {
		says = append(says, parts[i])
	}
	return says
}
