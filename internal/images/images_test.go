// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localregistry"
)

// LayoutEnv names the OCI layout of make images for the test to check
// (make test-images sets it). Without it the test builds the same images
// from a tiny static binary in a second, so that make test-unit checks
// how they are assembled without building clustergate and etcd.
const LayoutEnv = "CLUSTERGATE_IMAGES"

// baseFiles are the base layer's entries: no shell, no libc, nothing that
// executes.
var baseFiles = []string{
	"/etc", "/etc/group", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs", images.CABundle,
	"/home", "/home/nonroot", "/root", "/tmp",
}

// run is a program of an image started on the host with args; its output
// must contain want (with the tiny binary, its name and args).
type run struct {
	path string
	args []string
	want string
}

// TestImagesFromRegistry pushes the images of an OCI layout to a registry
// in the process, as make images does, and reads each one back from it:
// OCI media types, configuration (entrypoint, numeric non-root user,
// working directory, PATH, labels), every file of every layer (exactly the
// expected ones, so no shell), ownership of the writable directories, and
// its programs, which must be static and run.
func TestImagesFromRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	layoutDir, real := os.Getenv(LayoutEnv), true
	if layoutDir == "" {
		layoutDir, real = tinyLayout(t), false
	}
	reg, err := localregistry.Start(localregistry.Options{BlobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	start := time.Now()
	pushed, err := images.PushLayout(ctx, layoutDir, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %d references to %s in %s", len(pushed), reg.Host, time.Since(start).Round(time.Millisecond))
	refs := map[string]name.Tag{}
	for _, p := range pushed {
		refs[p.Reference.Context().RepositoryStr()] = p.Reference
	}

	tests := []struct {
		repository string
		title      string
		source     string
		entrypoint []string
		env        []string
		workingDir string
		files      []string
		// owned are the directories the image's user owns, mode 0700.
		owned []string
		runs  func(version string) []run
	}{{
		repository: images.APIServerRepository,
		title:      "clustergate-apiserver",
		source:     images.Source,
		entrypoint: []string{images.APIServerBinary},
		env:        []string{"PATH=/"},
		workingDir: images.APIServerDataDir,
		files:      []string{images.APIServerBinary, "/var", "/var/lib", images.APIServerDataDir},
		owned:      []string{images.APIServerDataDir, "/home/nonroot"},
		runs: func(string) []run {
			return []run{{path: images.APIServerBinary, args: []string{"--help"}, want: "--etcd-servers"}}
		},
	}, {
		repository: images.EtcdRepository,
		title:      "etcd",
		source:     images.EtcdSource,
		entrypoint: []string{images.EtcdBinDir + "/etcd"},
		env:        []string{"PATH=" + images.EtcdBinDir},
		workingDir: images.EtcdDataDir,
		files: []string{"/usr", "/usr/local", images.EtcdBinDir, images.EtcdBinDir + "/etcd",
			images.EtcdBinDir + "/etcdctl", images.EtcdBinDir + "/etcdutl", "/var", "/var/lib", images.EtcdDataDir},
		owned: []string{images.EtcdDataDir, "/home/nonroot"},
		// The version label must be what the binaries say they are.
		runs: func(version string) []run {
			return []run{
				{path: images.EtcdBinDir + "/etcd", args: []string{"--version"}, want: "etcd Version: " + version},
				{path: images.EtcdBinDir + "/etcdctl", args: []string{"version"}, want: "etcdctl version: " + version},
				{path: images.EtcdBinDir + "/etcdutl", args: []string{"version"}, want: "etcdutl version: " + version},
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.repository, func(t *testing.T) {
			ref, ok := refs[tc.repository]
			if !ok {
				t.Fatalf("%s was not pushed; pushed: %v", tc.repository, pushed)
			}
			img, err := remote.Image(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %q (%v), want %q", mt, err, types.OCIManifestSchema1)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
				t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
			}
			c := cfg.Config
			if diff := cmp.Diff(tc.entrypoint, c.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			if len(c.Cmd) != 0 || c.Shell != nil {
				t.Errorf("cmd %q, shell %q: want none", c.Cmd, c.Shell)
			}
			if want := fmt.Sprintf("%d:%d", images.UID, images.GID); c.User != want {
				t.Errorf("user %q, want %q", c.User, want)
			}
			if diff := cmp.Diff(tc.env, c.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if c.WorkingDir != tc.workingDir {
				t.Errorf("working directory %q, want %q", c.WorkingDir, tc.workingDir)
			}
			version := c.Labels["org.opencontainers.image.version"]
			for label, want := range map[string]string{
				"org.opencontainers.image.title":    tc.title,
				"org.opencontainers.image.source":   tc.source,
				"org.opencontainers.image.licenses": "Apache-2.0",
				"org.opencontainers.image.version":  version,
			} {
				if c.Labels[label] != want || want == "" {
					t.Errorf("label %s = %q, want %q", label, c.Labels[label], want)
				}
			}
			if c.Labels["org.opencontainers.image.revision"] == "" {
				t.Errorf("label org.opencontainers.image.revision is empty")
			}

			fs := readLayers(t, img)
			want := append(append([]string(nil), baseFiles...), tc.files...)
			sort.Strings(want)
			if diff := cmp.Diff(want, fs.paths()); diff != "" {
				t.Errorf("files of the layers (-want +got):\n%s", diff)
			}
			for _, p := range fs.paths() {
				switch filepath.Base(p) {
				case "sh", "bash", "ash", "dash", "busybox":
					t.Errorf("%s: a shell", p)
				}
			}
			for _, p := range tc.owned {
				if h := fs[p]; h == nil || h.Uid != images.UID || h.Gid != images.GID || h.Mode != 0o700 {
					t.Errorf("%s: %+v, want a directory of %d:%d, mode 0700", p, h, images.UID, images.GID)
				}
			}
			if h := fs["/tmp"]; h == nil || h.Mode != 0o1777 {
				t.Errorf("/tmp: %+v, want mode 1777", h)
			}
			if !strings.Contains(string(fs.content(t, "/etc/passwd")), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd has no user nonroot with UID 65532")
			}

			dir := t.TempDir()
			for _, r := range tc.runs(version) {
				bin := filepath.Join(dir, filepath.Base(r.path))
				if err := os.WriteFile(bin, fs.content(t, r.path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := images.CheckStatic(bin); err != nil {
					t.Error(err)
				}
				want := r.want
				if !real {
					want = "tiny " + strings.Join(r.args, " ")
				}
				out, err := exec.CommandContext(ctx, bin, r.args...).CombinedOutput()
				if err != nil || !strings.Contains(string(out), want) {
					t.Errorf("%s %s: %v, output without %q:\n%s", r.path, strings.Join(r.args, " "), err, want, out)
				}
			}
		})
	}
}
