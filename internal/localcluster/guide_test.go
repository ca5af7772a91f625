// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"os"
	"strings"
	"testing"
)

// readmeGuideMarker precedes README.md's quick-start block, which must be
// the guide `make run` prints, so that the README cannot promise commands
// the guide's end-to-end test does not run.
const readmeGuideMarker = "<!-- quick start: Guide in internal/localcluster/guide.go; TestGuideInREADME compares -->"

// TestGuideInREADME fails when README.md's quick start differs from the
// guide rendered with READMEGuideValues, and prints the block it wants.
func TestGuideInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := RenderGuide(Guide(READMEGuideValues))
	_, after, ok := strings.Cut(string(readme), readmeGuideMarker+"\n```sh\n")
	if !ok {
		t.Fatalf("README.md lacks the quick-start block: the line %q, then a ```sh block with:\n%s", readmeGuideMarker, want)
	}
	got, _, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatal("README.md's quick-start block does not end")
	}
	if got != want {
		t.Errorf("README.md's quick-start block differs from the guide make run prints; want:\n%s\ngot:\n%s", want, got)
	}
}

// TestGuide checks what the guide's test and README rely on: every step
// has a command, a section's text starts a group, and no command still
// names another control plane's directory.
func TestGuide(t *testing.T) {
	steps := Guide(GuideValues{Dir: "DIR"})
	if steps[0].Section == "" {
		t.Error("the guide starts without a section")
	}
	for i, s := range steps {
		if s.Command == "" {
			t.Errorf("step %d has no command", i)
		}
		if strings.Contains(s.Command, READMEGuideValues.Dir) {
			t.Errorf("step %d names %s instead of GuideValues.Dir: %s", i, READMEGuideValues.Dir, s.Command)
		}
		if s.Promise.Refused && len(s.Promise.Says) == 0 {
			t.Errorf("step %d is refused without saying why: %s", i, s.Command)
		}
	}
}
