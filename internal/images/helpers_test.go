// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/clustergate/clustergate/internal/images"
)

// tinyProgram prints its name and arguments: it stands in for every binary
// of the images, built static as they are.
const tinyProgram = `package main

import (
	"fmt"
	"os"
	"strings"
)

func main() { fmt.Println("tiny " + strings.Join(os.Args[1:], " ")) }
`

// tinyLayout builds the images of make images, with the tiny program in
// place of clustergate-apiserver, etcd, etcdctl and etcdutl, into an OCI
// layout, and returns its directory.
func tinyLayout(t *testing.T) string {
	t.Helper()
	src, bin := t.TempDir(), t.TempDir()
	for file, content := range map[string]string{"go.mod": "module tiny\n\ngo 1.26\n", "main.go": tinyProgram} {
		if err := os.WriteFile(filepath.Join(src, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tiny := filepath.Join(bin, "tiny")
	cmd := exec.Command("go", "build", "-trimpath", "-o", tiny, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the tiny program: %v\n%s", err, out)
	}
	for _, name := range images.EtcdBinaries {
		if err := os.Link(tiny, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	base, err := images.BaseLayer()
	if err != nil {
		t.Fatal(err)
	}
	info := images.BuildInfo{Version: "v0.0.0-test", Revision: strings.Repeat("0", 40), EtcdVersion: "v3.7.3",
		Architecture: runtime.GOARCH}
	var built []images.Tagged
	for _, spec := range []images.Spec{images.APIServer(base, tiny, info), images.Etcd(base, bin, info)} {
		img, err := images.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, images.Tagged{Spec: spec, Image: img})
	}
	dir := filepath.Join(t.TempDir(), "oci")
	if err := images.WriteLayout(dir, built); err != nil {
		t.Fatal(err)
	}
	return dir
}

// files are the entries of an image's layers, by absolute path, with the
// content of regular files.
type files map[string]*entry

type entry struct {
	*tar.Header
	data []byte
}

// readLayers reads every layer of an image, lower layers first, as a
// runtime unpacks them (no layer here deletes or replaces anything).
func readLayers(t *testing.T, img v1.Image) files {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	fs := files{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var data bytes.Buffer
			if _, err := io.Copy(&data, tr); err != nil {
				t.Fatal(err)
			}
			fs["/"+strings.TrimSuffix(h.Name, "/")] = &entry{Header: h, data: data.Bytes()}
		}
		rc.Close()
	}
	return fs
}

func (fs files) paths() []string {
	var all []string
	for p := range fs {
		all = append(all, p)
	}
	sort.Strings(all)
	return all
}

func (fs files) content(t *testing.T, path string) []byte {
	t.Helper()
	e := fs[path]
	if e == nil || e.Typeflag != tar.TypeReg {
		t.Fatalf("%s: no regular file in the image", path)
	}
	return e.data
}
