// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-up runs the local control plane of `make run` in the
// foreground until Ctrl-C or SIGTERM, then stops everything it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/internal/localregistry"
)

// The installed way's registry (make registry's address), network
// interface prefix and pod addresses.
const (
	registryAddress = "127.0.0.1:5000"
	networkPrefix   = "cgrun"
	podCIDR         = "10.244.254.0/24"
)

func main() {
	root, _ := os.Getwd()
	dir := flag.String("dir", localcluster.DefaultDir(root),
		"directory for certificates, kubeconfigs, data and logs; "+localcluster.DirEnv+" sets it for hack/local-user.sh too")
	bin := flag.String("bin", filepath.Join(root, "_output", "bin"), "directory of the built binaries")
	withPrometheus := flag.Bool("prometheus", false, "also run Prometheus with the rules of artifacts/monitoring, scraping clustergate")
	installed := flag.Bool("installed", false, "run clustergate the installed way (root): artifacts/overlays/ha applied with kubectl apply -k, "+
		"its pods on the process node, images of make images from a registry on "+registryAddress)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, root, *dir, *bin, *withPrometheus, *installed); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, dir, bin string, withPrometheus, installed bool) error {
	start := time.Now()
	logf := func(format string, args ...any) { fmt.Printf("local-up: "+format+"\n", args...) }
	opts := localcluster.Options{Dir: dir, BinDir: bin, RepoRoot: root, Logf: logf,
		ClustergateArgs: localcluster.DemoClustergateArgs}
	var install localcluster.InstallOptions
	if installed {
		if os.Geteuid() != 0 {
			return errors.New("INSTALLED=1 make run needs root: the process node runs each pod in a network namespace " +
				"of its own (ip netns, a veth pair) and its image's files as the pod's root; run it as root, or use make run")
		}
		reg, err := localregistry.Start(localregistry.Options{Address: registryAddress, BlobDir: filepath.Join(root, "_output", "registry")})
		if err != nil {
			return fmt.Errorf("the registry on %s (is make registry running?): %w", registryAddress, err)
		}
		defer reg.Close()
		pushed, err := images.PushLayout(ctx, filepath.Join(root, "_output", "images", "oci"), reg.Host)
		if err != nil {
			return err
		}
		if install, err = localcluster.PushedImages(pushed); err != nil {
			return err
		}
		logf("images in the registry on %s: %s@%s, %s", reg.Host, install.ServerRef, install.ServerDigest, install.EtcdRef)
		// What a crashed run left, then what this one creates.
		if err := localcluster.RemoveNetwork(networkPrefix); err != nil {
			return err
		}
		defer func() {
			if err := localcluster.RemoveNetwork(networkPrefix); err != nil {
				logf("%v", err)
			}
		}()
		opts.ProcessNode = &localcluster.ProcessNodeOptions{NetworkPrefix: networkPrefix, PodCIDR: podCIDR}
		opts.Installed = true
	}
	cp, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping")
		cp.Stop()
	}()
	logf("control plane ready in %s", time.Since(start).Round(100*time.Millisecond))
	if installed {
		if err := cp.StartCertManager(ctx); err != nil {
			return err
		}
		install.Gardener, install.ExternalURL = true, cp.GardenURL
		// What make run's process gets too: the demo's approvals and short
		// sessions.
		install.ServerArgs = append([]string{"--session-min-ttl=10s"}, localcluster.DemoClustergateArgs...)
		if err := cp.InstallHA(ctx, install); err != nil {
			return err
		}
		logf("clustergate installed in %s", time.Since(start).Round(100*time.Millisecond))
	}
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
	how := fmt.Sprintf("its data plane listens at %s", cp.DataPlaneURL)
	logs := values.Dir + "/logs"
	if installed {
		how = "it runs the installed way: kubectl -n clustergate-system get pods\n" +
			"(deployment/clustergate and statefulset/clustergate-etcd; no data plane, so the guide leaves it out)"
		logs += "; the pods': kubectl -n clustergate-system logs deployment/clustergate"
	}
	fmt.Printf(`
clustergate is registered with the garden kube-apiserver at %s;
%s. What to type next, from %s
(README.md shows the same):

%s
%sLogs: %s

Press Ctrl-C to stop.
`, cp.GardenURL, how, root, indent(guide), prometheus, logs)

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
