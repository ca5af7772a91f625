// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/test/utils/runbook"
)

// TestUsageGuide types every command of docs/usage.md's sh blocks, in
// order, in one bash, on the control plane set up as make run sets it up
// (shared with TestQuickStart), and checks what each line's comment
// promises: a failure where it names a 403, a refusal, Forbidden or an
// error, success otherwise, and every text it shows in backquotes in the
// output. Only blocks marked `<!-- not run: … -->` are skipped.
func TestUsageGuide(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(cp.RepoRoot(), "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := runbook.Blocks(doc, "sh")
	if len(blocks) == 0 {
		t.Fatal("docs/usage.md has no sh block")
	}
	local, dir := demoControlPlane(t)
	// The guide names make run's directory; this control plane has its own.
	dirInGuide := localcluster.READMEGuideValues.Dir
	sh := startShell(t, local.RepoRoot(), dir)
	step := 0
	// Failures are told again at the end, where CI's tail of the log shows
	// them, after the steps that followed.
	var failures []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Error(msg)
		failures = append(failures, msg)
	}
	defer func() {
		if len(failures) > 0 {
			t.Errorf("%d failed steps of docs/usage.md:\n%s", len(failures), strings.Join(failures, "\n"))
		}
	}()
	for _, block := range blocks {
		if block.NotRun != "" {
			t.Logf("not run (%s):\n%s", block.NotRun, block.Text)
			continue
		}
		for _, line := range runbook.Lines(block.Text) {
			step++
			command := strings.ReplaceAll(line.Command, dirInGuide, local.GuideValues().Dir)
			begin := time.Now()
			out, code := sh.run(t, command)
			t.Logf("step %d: $ %s   # %s\n%s[exit %d in %s]", step, command, line.Comment, out, code, time.Since(begin).Round(10*time.Millisecond))
			if refused := code != 0; refused != line.Refused() {
				fail("step %d: %s exited %d; its comment %q promises %s", step, command, code, line.Comment,
					map[bool]string{true: "a refusal", false: "success"}[line.Refused()])
			}
			for _, want := range line.Says() {
				if !strings.Contains(out, want) {
					fail("step %d: %s does not say %q, which its comment %q promises; it printed:\n%s", step, command, want, line.Comment, out)
				}
			}
		}
	}
}
