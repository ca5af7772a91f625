// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestSBOM describes this test's own binary, which carries Go build
// information like any released one.
func TestSBOM(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	img := SBOMImage{Repository: "ghcr.io/clustergate/clustergate-apiserver", Version: "v1.2.3",
		Digest: "sha256:" + strings.Repeat("ab", 32), Binaries: []string{self}, Created: time.Unix(1700000000, 0)}
	doc, err := SBOM(img)
	if err != nil {
		t.Fatal(err)
	}
	again, err := SBOM(img)
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != string(again) {
		t.Error("the same image gave two different SBOMs")
	}
	var d spdxDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if d.SPDXVersion != "SPDX-2.3" || d.CreationInfo.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("document header %+v", d)
	}
	ids := map[string]spdxPackage{}
	for _, p := range d.Packages {
		if _, dup := ids[p.SPDXID]; dup {
			t.Errorf("SPDXID %s twice", p.SPDXID)
		}
		ids[p.SPDXID] = p
	}
	if image := ids["SPDXRef-Image"]; image.Checksums[0].Value != strings.Repeat("ab", 32) ||
		!strings.HasPrefix(image.ExternalRefs[0].Locator, "pkg:oci/clustergate-apiserver@sha256%3Aabab") {
		t.Errorf("image package %+v", image)
	}
	// Every relationship joins packages of the document, and the binary
	// depends on the standard library. (A test binary records no modules;
	// test/release checks an image's SBOM lists what its server links.)
	stdlib := false
	for _, r := range d.Relationships {
		if _, ok := ids[r.Related]; !ok {
			t.Errorf("relationship %+v to no package", r)
		}
		if r.Element == "SPDXRef-Binary-1" && r.Type == "DEPENDS_ON" {
			stdlib = stdlib || strings.HasPrefix(ids[r.Related].ExternalRefs[0].Locator, "pkg:golang/stdlib@1.")
		}
	}
	if !stdlib {
		t.Errorf("the binary does not depend on the standard library: %+v", d.Relationships)
	}

	if _, err := SBOM(SBOMImage{Repository: "r", Digest: "md5:00", Binaries: []string{self}}); err == nil {
		t.Error("a digest other than sha256 was accepted")
	}
	if _, err := SBOM(SBOMImage{Repository: "r", Digest: "sha256:00", Binaries: []string{"/etc/hostname"}}); err == nil {
		t.Error("a file without Go build information was accepted")
	}
}

// TestPluginArchives packs each archive form, reads it back as krew would
// unpack it, and checks that the same input gives the same digest.
func TestPluginArchives(t *testing.T) {
	dir := t.TempDir()
	binary, license := filepath.Join(dir, "bin"), filepath.Join(dir, "LICENSE")
	if err := os.WriteFile(binary, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(license, []byte("Apache"), 0o644); err != nil {
		t.Fatal(err)
	}
	modified := time.Unix(1700000000, 0)
	tests := []struct {
		platform Platform
		name     string
		entries  map[string]string // name: content
	}{
		{Platform{"linux", "amd64"}, "kubectl-session_v1.0.0_linux_amd64.tar.gz", map[string]string{"kubectl-session": "#!binary", "LICENSE": "Apache"}},
		{Platform{"darwin", "arm64"}, "kubectl-session_v1.0.0_darwin_arm64.tar.gz", map[string]string{"kubectl-session": "#!binary", "LICENSE": "Apache"}},
		{Platform{"windows", "amd64"}, "kubectl-session_v1.0.0_windows_amd64.zip", map[string]string{"kubectl-session.exe": "#!binary", "LICENSE": "Apache"}},
	}
	var archives []Archive
	for _, tt := range tests {
		t.Run(tt.platform.String(), func(t *testing.T) {
			out := t.TempDir()
			a, err := WritePluginArchive(out, "v1.0.0", tt.platform, binary, license, modified)
			if err != nil {
				t.Fatal(err)
			}
			if a.Name != tt.name || a.Path != filepath.Join(out, tt.name) {
				t.Errorf("archive %+v, want %s", a, tt.name)
			}
			if sum, err := FileSHA256(a.Path); err != nil || sum != a.SHA256 {
				t.Errorf("digest %s, file's %s %v", a.SHA256, sum, err)
			}
			if got := readArchive(t, a.Path); !maps.Equal(got, tt.entries) {
				t.Errorf("archive holds %v, want %v", got, tt.entries)
			}
			b, err := WritePluginArchive(t.TempDir(), "v1.0.0", tt.platform, binary, license, modified)
			if err != nil || b.SHA256 != a.SHA256 {
				t.Errorf("the same binary packed twice: %s and %s (%v)", a.SHA256, b.SHA256, err)
			}
			archives = append(archives, a)
		})
	}

	manifest, err := KrewManifest("v1.0.0", "https://example.com/dl/", archives)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Name != KrewName || p.Spec.Version != "v1.0.0" || len(p.Spec.Platforms) != len(tests) {
		t.Fatalf("krew manifest %s", manifest)
	}
	for i, pl := range p.Spec.Platforms {
		a := archives[i]
		if pl.URI != "https://example.com/dl/"+a.Name || pl.SHA256 != a.SHA256 || pl.Bin != a.Binary ||
			pl.Selector.MatchLabels["os"] != a.Platform.OS || pl.Selector.MatchLabels["arch"] != a.Platform.Arch {
			t.Errorf("platform %+v, archive %+v", pl, a)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Platform
		ok   bool
	}{
		{"linux/amd64", Platform{"linux", "amd64"}, true},
		{"windows/arm64", Platform{"windows", "arm64"}, true},
		{"linux", Platform{}, false},
		{"/amd64", Platform{}, false},
		{"linux/", Platform{}, false},
		{"linux/arm/v7", Platform{}, false},
	} {
		got, err := ParsePlatform(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePlatform(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// TestRenderLayouts renders every shipped layout with kubectl, as make
// release does, and finds each image pinned by digest and none by tag.
func TestRenderLayouts(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is needed to render the layouts: ", err)
	}
	artifacts, err := filepath.Abs(filepath.Join("..", "..", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := []Image{
		{Name: "ghcr.io/clustergate/clustergate-apiserver", NewName: "registry.example/cg/clustergate-apiserver", Digest: "sha256:" + strings.Repeat("1", 64)},
		{Name: "ghcr.io/clustergate/etcd", NewName: "registry.example/cg/etcd", Digest: "sha256:" + strings.Repeat("2", 64)},
	}
	work := t.TempDir()
	for _, l := range Layouts {
		t.Run(l.Name, func(t *testing.T) {
			out, err := RenderLayout(context.Background(), "kubectl", artifacts, work, l, pinned)
			if err != nil {
				t.Fatal(err)
			}
			runsPods := l.Name != "virtual-garden"
			if got := strings.Contains(string(out), "image: registry.example/cg/clustergate-apiserver@sha256:1111"); got != runsPods {
				t.Errorf("the server's image pinned: %t, want %t", got, runsPods)
			}
			if strings.Contains(string(out), "ghcr.io/") {
				t.Error("an image is still named by its tag")
			}
		})
	}
}

func readArchive(t *testing.T, path string) map[string]string {
	t.Helper()
	got := map[string]string{}
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			got[f.Name] = string(b)
		}
		return got
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
}
