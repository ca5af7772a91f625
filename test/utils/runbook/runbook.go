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
