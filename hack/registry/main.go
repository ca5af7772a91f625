// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command registry serves a local OCI distribution registry on 127.0.0.1
// (internal/localregistry) in the foreground until Ctrl-C, with the images
// of make images pushed into it at start: pull them, or push more with
// `REGISTRY=<address> make images`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localregistry"
)

func main() {
	root, _ := os.Getwd()
	address := flag.String("address", "127.0.0.1:5000", "loopback host:port to listen on")
	dir := flag.String("dir", filepath.Join(root, "_output", "registry"), "directory of the registry's blobs")
	layout := flag.String("layout", filepath.Join(root, "_output", "images", "oci"),
		"OCI image layout to push at start (make images writes it); skipped when missing")
	verbose := flag.Bool("v", false, "log every request")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *address, *dir, *layout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, address, dir, layout string, verbose bool) error {
	o := localregistry.Options{Address: address, BlobDir: dir}
	if verbose {
		o.Log = os.Stderr
	}
	r, err := localregistry.Start(o)
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Printf("registry: serving on %s, blobs in %s\n", r.Host, dir)
	if _, err := os.Stat(filepath.Join(layout, "index.json")); err == nil {
		pushed, err := images.PushLayout(ctx, layout, r.Host)
		if err != nil {
			return err
		}
		for _, p := range pushed {
			fmt.Printf("registry: %s@%s\n", p.Reference, p.Digest)
		}
	}
	<-ctx.Done()
	return nil
}
