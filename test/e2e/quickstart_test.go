// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// TestQuickStart types what `make run` prints and README.md's quick start
// shows (localcluster.Guide), line by line in one bash as a newcomer would,
// and checks what each line's comment promises: the exit status, the text
// it prints, the 403 where one is promised.
//
// It runs on the control plane set up as make run sets it up, which it
// shares with TestUsageGuide (demoControlPlane).
func TestQuickStart(t *testing.T) {
	local, dir := demoControlPlane(t)
	sh := startShell(t, local.RepoRoot(), dir)
	for i, step := range localcluster.Guide(local.GuideValues()) {
		begin := time.Now()
		out, code := sh.run(t, step.Command)
		t.Logf("step %d: $ %s   # %s\n%s[exit %d in %s]", i+1, step.Command, step.Comment, out, code, time.Since(begin).Round(10*time.Millisecond))
		if refused := code != 0; refused != step.Promise.Refused {
			t.Errorf("step %d: %s exited %d; its comment %q promises %s", i+1, step.Command, code, step.Comment,
				map[bool]string{true: "a refusal", false: "success"}[step.Promise.Refused])
		}
		for _, want := range step.Promise.Says {
			if !strings.Contains(out, want) {
				t.Errorf("step %d: %s does not say %q, which its comment %q promises; it printed:\n%s", i+1, step.Command, want, step.Comment, out)
			}
		}
	}
}
