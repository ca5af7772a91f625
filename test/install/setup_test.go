// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/internal/localregistry"
)

// startGarden starts, in _output/install/<dir>, a garden whose process
// node pulls from a local registry the images of make images, with
// cert-manager's controllers running against it, and returns it with the
// install options that name the pushed images. With virtualGarden it adds
// the virtual garden (localcluster.Options.VirtualGarden). Cleanups stop
// everything and check that the node left no network behind.
func startGarden(t *testing.T, dir string, virtualGarden bool) (*localcluster.ControlPlane, localcluster.InstallOptions) {
	t.Helper()
	if os.Geteuid() != 0 {
		// Failing, not skipping: make test must not pass without it.
		t.Fatal("the process node needs root (network namespaces, chroot): run make test-install as root")
	}
	// go test runs in the package's directory.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "_output", "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "process-kubelet", "gardener-apiserver", "cert-manager"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is missing: run hack/tools/build.sh and hack/tools/build.sh cert-manager", b)
		}
	}
	layout := filepath.Join(root, "_output", "images", "oci")
	if _, err := os.Stat(filepath.Join(layout, "index.json")); err != nil {
		t.Fatalf("no images in %s: run make images", layout)
	}
	ctx := context.Background()

	reg, err := localregistry.Start(localregistry.Options{BlobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	pushed, err := images.PushLayout(ctx, layout, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	install, err := localcluster.PushedImages(pushed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images: %s@%s, %s", install.ServerRef, install.ServerDigest, install.EtcdRef)

	prefix := fmt.Sprintf("ci%04x", rand.IntN(1<<16))
	t.Cleanup(func() {
		if err := localcluster.RemoveNetwork(prefix); err != nil {
			t.Error(err)
		}
	})
	cp, err := localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(root, "_output", "install", dir), BinDir: bin, RepoRoot: root, Logf: t.Logf,
		ProcessNode: &localcluster.ProcessNodeOptions{NetworkPrefix: prefix, PodCIDR: fmt.Sprintf("10.244.%d.0/24", rand.IntN(250)+1)},
		Installed:   true, VirtualGarden: virtualGarden,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if left := localcluster.NetworkLinks(prefix); len(left) > 0 {
			t.Errorf("the node left %v", left)
		}
	})
	if err := cp.StartCertManager(ctx); err != nil {
		t.Fatal(err)
	}
	return cp, install
}
