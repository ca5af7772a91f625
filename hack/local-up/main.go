// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-up runs the local control plane of `make run` in the
// foreground until Ctrl-C or SIGTERM, then stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

func main() {
	root, _ := os.Getwd()
	dir := flag.String("dir", localcluster.DefaultDir(root),
		"directory for certificates, kubeconfigs, data and logs; "+localcluster.DirEnv+" sets it for hack/local-user.sh too")
	bin := flag.String("bin", filepath.Join(root, "_output", "bin"), "directory of the built binaries")
	withPrometheus := flag.Bool("prometheus", false, "also run Prometheus with the rules of artifacts/monitoring, scraping clustergate")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, root, *dir, *bin, *withPrometheus); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, dir, bin string, withPrometheus bool) error {
	start := time.Now()
	logf := func(format string, args ...any) { fmt.Printf("local-up: "+format+"\n", args...) }
	cp, err := localcluster.Start(ctx, localcluster.Options{Dir: dir, BinDir: bin, RepoRoot: root, Logf: logf,
		ClustergateArgs: localcluster.DemoClustergateArgs})
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping")
		cp.Stop()
	}()
	logf("control plane ready in %s", time.Since(start).Round(100*time.Millisecond))
	prometheus := ""
	if withPrometheus {
		p, err := cp.StartPrometheus(ctx, localcluster.PrometheusOptions{ScrapeInterval: 10 * time.Second})
		if err != nil {
			return err
		}
		// The web UI's assets are not part of the Go module: the API only.
		prometheus = fmt.Sprintf("Prometheus (rules of artifacts/monitoring): curl %s/api/v1/alerts\n"+
			"                                          curl '%s/api/v1/query?query=job:clustergate_sessions:max'\n", p.URL, p.URL)
	}
	// A demo that did not come up whole still leaves a control plane worth
	// looking at: say what failed and carry on.
	if err := cp.Demo(ctx); err != nil {
		logf("the demo is incomplete, some of the commands below will fail: %v", err)
	}

	values := cp.GuideValues()
	guide := localcluster.RenderGuide(localcluster.Guide(values))
	fmt.Printf(`
clustergate is registered with the garden kube-apiserver at %s;
its data plane listens at %s. What to type next, from %s
(README.md shows the same):

%s
%sLogs: %s

Press Ctrl-C to stop.
`, cp.GardenURL, cp.DataPlaneURL, root, indent(guide), prometheus, values.Dir+"/logs")

	<-ctx.Done()
	return nil
}

// indent sets the guide's lines off from the prose around them.
func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.String()
}
