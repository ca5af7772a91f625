// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command images builds the images users install (make images), without a
// container runtime: clustergate-apiserver (CGO_ENABLED=0, -tags=
// fieldsv1string, as make build) and etcd with etcdctl and etcdutl at the
// version pinned in hack/tools/etcd (hack/tools/build.sh etcd, static, so
// the tests' etcd is the image's). It assembles them with
// internal/images, writes them to an OCI image layout (-output, default
// _output/images/oci) and, given -registry or REGISTRY, pushes them there.
// Images are for the build machine's architecture.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/hack/internal/command"
	"github.com/clustergate/clustergate/internal/images"
)

func main() {
	root, _ := os.Getwd()
	output := flag.String("output", filepath.Join(root, "_output", "images"),
		"directory of the binaries (bin/) and the OCI image layout (oci/)")
	registry := flag.String("registry", os.Getenv("REGISTRY"),
		"host:port of a registry to push to, e.g. 127.0.0.1:5000 (go run ./hack/registry); default $REGISTRY, none: no push")
	version := flag.String("version", os.Getenv("VERSION"),
		"clustergate's version label and tag; default $VERSION, else v0.0.0-<commit>[-dirty]")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, root, *output, *registry, *version); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, output, registry, version string) error {
	start := time.Now()
	logf := func(format string, args ...any) { fmt.Printf("images: "+format+"\n", args...) }
	info, err := buildInfo(ctx, root, version)
	if err != nil {
		return err
	}
	binDir := filepath.Join(output, "bin", "linux-"+info.Architecture)
	apiserver := filepath.Join(binDir, "clustergate-apiserver")
	step := time.Now()
	if err := command.Run(ctx, root, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + info.Architecture},
		"go", "build", "-tags=fieldsv1string", "-trimpath", "-ldflags=-s -w", "-o", apiserver,
		"./cmd/clustergate-apiserver"); err != nil {
		return err
	}
	logf("built clustergate-apiserver in %s", time.Since(step).Round(100*time.Millisecond))
	step = time.Now()
	if err := command.Run(ctx, root, nil, "hack/tools/build.sh", "etcd"); err != nil {
		return err
	}
	etcdDir, err := etcdBinDir(root)
	if err != nil {
		return err
	}
	logf("etcd %s from %s (%s)", info.EtcdVersion, etcdDir, time.Since(step).Round(100*time.Millisecond))
	for _, bin := range append([]string{apiserver}, binaries(etcdDir)...) {
		if err := images.CheckStatic(bin); err != nil {
			return err
		}
	}

	step = time.Now()
	base, err := images.BaseLayer()
	if err != nil {
		return err
	}
	var built []images.Tagged
	for _, spec := range []images.Spec{images.APIServer(base, apiserver, info), images.Etcd(base, etcdDir, info)} {
		img, err := images.Build(spec)
		if err != nil {
			return err
		}
		built = append(built, images.Tagged{Spec: spec, Image: img})
	}
	layoutDir := filepath.Join(output, "oci")
	if err := images.WriteLayout(layoutDir, built); err != nil {
		return err
	}
	logf("assembled and wrote %s in %s", layoutDir, time.Since(step).Round(100*time.Millisecond))
	for _, t := range built {
		if err := describe(logf, t); err != nil {
			return err
		}
	}
	if registry != "" {
		step = time.Now()
		pushed, err := images.PushLayout(ctx, layoutDir, registry)
		if err != nil {
			return err
		}
		for _, p := range pushed {
			logf("pushed %s@%s", p.Reference, p.Digest)
		}
		logf("pushed in %s", time.Since(step).Round(100*time.Millisecond))
	} else {
		logf("no REGISTRY: not pushed (go run ./hack/registry serves the layout on 127.0.0.1)")
	}
	logf("done in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// describe prints an image's references, digest, layers and sizes.
func describe(logf func(string, ...any), t images.Tagged) error {
	digest, err := t.Image.Digest()
	if err != nil {
		return err
	}
	m, err := t.Image.Manifest()
	if err != nil {
		return err
	}
	var total int64
	var sizes []string
	for _, l := range m.Layers {
		total += l.Size
		sizes = append(sizes, mib(l.Size))
	}
	logf("%s:%s %s: %d layers (%s), %s compressed",
		t.Spec.Repository, strings.Join(t.Spec.Tags, ","), digest, len(m.Layers), strings.Join(sizes, " + "), mib(total))
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// buildInfo reads the versions: clustergate's from git (unless given), the
// etcd module's from hack/tools/etcd/go.mod.
func buildInfo(ctx context.Context, root, version string) (images.BuildInfo, error) {
	info := images.BuildInfo{Architecture: runtime.GOARCH, Revision: "unknown"}
	if rev, err := command.Output(ctx, root, "git", "rev-parse", "HEAD"); err == nil {
		info.Revision = rev
	}
	if version == "" {
		version = "v0.0.0-dev"
		if len(info.Revision) >= 12 {
			version = "v0.0.0-" + info.Revision[:12]
			if status, err := command.Output(ctx, root, "git", "status", "--porcelain", "--untracked-files=no"); err == nil && status != "" {
				version += "-dirty"
			}
		}
	}
	info.Version = version
	etcd, err := command.Output(ctx, filepath.Join(root, "hack", "tools", "etcd"),
		"go", "list", "-m", "-f", "{{.Version}}", "go.etcd.io/etcd/server/v3")
	if err != nil {
		return info, err
	}
	info.EtcdVersion = etcd
	return info, nil
}

// etcdBinDir is the build of hack/tools/build.sh that _output/bin/etcd
// links to, which holds etcdctl and etcdutl too.
func etcdBinDir(root string) (string, error) {
	etcd, err := filepath.EvalSymlinks(filepath.Join(root, "_output", "bin", "etcd"))
	if err != nil {
		return "", err
	}
	return filepath.Dir(etcd), nil
}

func binaries(dir string) []string {
	var all []string
	for _, name := range images.EtcdBinaries {
		all = append(all, filepath.Join(dir, name))
	}
	return all
}
