// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// quickStartStepTimeout bounds one line of the guide. None of them blocks;
// the slowest, `kubectl session kubeconfig --wait`, waits for credentials
// Gardener mints in a second or two.
const quickStartStepTimeout = 2 * time.Minute

// TestQuickStart types what `make run` prints and README.md's quick start
// shows (localcluster.Guide), line by line in one bash as a newcomer would,
// and checks what each line's comment promises: the exit status, the text
// it prints, the 403 where one is promised.
//
// It starts a control plane of its own, with make run's flags
// (localcluster.DemoClustergateArgs) and make run's demo: the suite's shared
// one makes another access group wait for approval, and the guide's
// approval walk-through opens an admin session on the shoot, which cannot
// wait there.
func TestQuickStart(t *testing.T) {
	ctx := context.Background()
	root := cp.RepoRoot()
	bin := filepath.Join(root, "_output", "bin")
	dir := filepath.Join(root, "_output", "e2e-quickstart")
	start := time.Now()
	local, err := localcluster.Start(ctx, localcluster.Options{Dir: dir, BinDir: bin, RepoRoot: root, Logf: t.Logf,
		ClustergateArgs: localcluster.DemoClustergateArgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Stop)
	if err := local.Demo(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane and demo ready in %s", time.Since(start).Round(100*time.Millisecond))

	sh := startShell(t, root, dir, bin)
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

// shell is one bash session, kept across the guide's lines as a user's
// terminal is: exported variables, shell variables and PATH carry over.
type shell struct {
	cmd   *exec.Cmd
	stdin io.Writer
	// done receives the exit status of each line, as bash reports it.
	done chan int
	// out is the file each line's stdout and stderr go to.
	out string
}

// doneMarker starts the line bash prints after each command, with its exit
// status; the commands' own output goes to a file, never to this stream.
const doneMarker = "__quickstart_exit="

// startShell starts bash in the checkout's root with the environment a
// newcomer starts from: no KUBECONFIG, no _output/bin on the PATH (TestMain
// put it there; the guide adds it itself), and the control plane's
// directory in localcluster.DirEnv, so that hack/local-user.sh finds it.
func startShell(t *testing.T, root, dir, bin string) *shell {
	t.Helper()
	var path []string
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.Clean(p) != filepath.Clean(bin) {
			path = append(path, p)
		}
	}
	env := []string{"PATH=" + strings.Join(path, string(os.PathListSeparator)), localcluster.DirEnv + "=" + dir}
	for _, e := range os.Environ() {
		switch strings.SplitN(e, "=", 2)[0] {
		case "PATH", "KUBECONFIG", "PWD", "OLDPWD", localcluster.DirEnv:
		default:
			env = append(env, e)
		}
	}
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = root, env
	// Its own process group: a line that hangs is killed with everything it
	// started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sh := &shell{cmd: cmd, stdin: stdin, done: make(chan int), out: filepath.Join(t.TempDir(), "out")}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	go func() {
		defer close(sh.done)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if code, ok := strings.CutPrefix(lines.Text(), doneMarker); ok {
				n, _ := strconv.Atoi(code)
				sh.done <- n
			}
		}
	}()
	return sh
}

// run types line into the shell and returns what it printed, stdout and
// stderr interleaved as on a terminal, and its exit status. A line that
// does not finish within quickStartStepTimeout fails the test.
func (sh *shell) run(t *testing.T, line string) (string, int) {
	t.Helper()
	// The group runs in the shell itself, so that assignments stay; its
	// stdin is empty, as nothing in the guide asks for input.
	if _, err := fmt.Fprintf(sh.stdin, "{ %s\n} >'%s' 2>&1 </dev/null; echo %s$?\n", line, sh.out, doneMarker); err != nil {
		t.Fatal(err)
	}
	select {
	case code, ok := <-sh.done:
		out, _ := os.ReadFile(sh.out)
		if !ok {
			t.Fatalf("bash ended during %s; it printed:\n%s", line, out)
		}
		return string(out), code
	case <-time.After(quickStartStepTimeout):
		out, _ := os.ReadFile(sh.out)
		_ = syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s did not finish within %s; it printed:\n%s", line, quickStartStepTimeout, out)
		return "", 0
	}
}
