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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

// demo is the control plane of the docs' tests (TestQuickStart,
// TestUsageGuide) and of TestSessionLimitPerOwner, which needs make run's
// default limit, started once for all of them: each start costs about
// 15 s and the memory of a second garden.
var demo struct {
	once sync.Once
	cp   *localcluster.ControlPlane
	dir  string
	err  error
}

// demoControlPlane returns the docs' control plane and its directory,
// starting it on first use with make run's flags
// (localcluster.DemoClustergateArgs) and make run's demo. It is not the
// suite's shared one: that one makes another access group wait for
// approval, and the guides open admin sessions on the shoot, which cannot
// wait there. The docs' tests run one after the other and leave what the
// others rely on as they found it; TestMain stops it (stopDemo).
func demoControlPlane(t *testing.T) (*localcluster.ControlPlane, string) {
	t.Helper()
	demo.once.Do(func() {
		root := cp.RepoRoot()
		demo.dir = filepath.Join(root, "_output", "e2e-quickstart")
		start := time.Now()
		// Not t.Logf: the control plane outlives the test that starts it.
		logf := func(format string, args ...any) { fmt.Printf("e2e demo: "+format+"\n", args...) }
		local, err := localcluster.Start(context.Background(), localcluster.Options{Dir: demo.dir,
			BinDir: filepath.Join(root, "_output", "bin"), RepoRoot: root, Logf: logf,
			ClustergateArgs: localcluster.DemoClustergateArgs})
		if err != nil {
			demo.err = err
			return
		}
		demo.cp = local
		if demo.err = local.Demo(context.Background()); demo.err == nil {
			logf("control plane and demo ready in %s", time.Since(start).Round(100*time.Millisecond))
		}
	})
	if demo.err != nil {
		t.Fatal("the docs' control plane:", demo.err)
	}
	return demo.cp, demo.dir
}

// stopDemo stops the docs' control plane if a test started it.
func stopDemo() {
	if demo.cp != nil {
		demo.cp.Stop()
	}
}

// shell is one bash session, kept across a guide's lines as a user's
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
const doneMarker = "__shell_exit="

// startShell starts bash in the checkout's root with the environment a
// newcomer starts from: no KUBECONFIG, no _output/bin on the PATH (TestMain
// put it there; the guides add it themselves), and the control plane's
// directory in localcluster.DirEnv, so that hack/local-user.sh finds it.
func startShell(t *testing.T, root, dir string) *shell {
	bin := filepath.Join(root, "_output", "bin")
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
// does not finish within stepTimeout fails the test.
func (sh *shell) run(t *testing.T, line string) (string, int) {
	t.Helper()
	// The group runs in the shell itself, so that assignments stay; its
	// stdin is empty, as nothing in the guides asks for input.
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
	case <-time.After(stepTimeout):
		out, _ := os.ReadFile(sh.out)
		_ = syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s did not finish within %s; it printed:\n%s", line, stepTimeout, out)
		return "", 0
	}
}

// stepTimeout bounds one line of a guide. None of them blocks; the
// slowest, `kubectl session kubeconfig --wait`, waits for credentials
// Gardener mints in a second or two.
const stepTimeout = 2 * time.Minute
