// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// KrewName is the plugin's name in krew's index. krew refuses names as
// generic as the binary's "session", so krew installs it as kubectl
// clustergate; the plugin reads the name it was called by for its help.
const KrewName = "clustergate"

// Platform is an OS and architecture the plugin is released for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "os/arch".
func ParsePlatform(s string) (Platform, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q is not os/arch", s)
	}
	return Platform{OS: goos, Arch: arch}, nil
}

// Archive is a released archive of the plugin.
type Archive struct {
	Platform Platform
	// Name is the file's name, Path where it was written.
	Name, Path string
	// SHA256 is the archive's digest in hex, as krew checks it.
	SHA256 string
	// Binary is the name of the plugin's binary inside.
	Binary string
}

// WritePluginArchive packs binary (the plugin built for p) and license
// into dir as kubectl-session_<version>_<os>_<arch>.tar.gz, or .zip for
// Windows, the forms krew unpacks. Entries carry modified, so that the
// same binary gives the same archive and the same digest.
func WritePluginArchive(dir, version string, p Platform, binary, license string, modified time.Time) (Archive, error) {
	a := Archive{Platform: p, Binary: "kubectl-session"}
	if p.OS == "windows" {
		a.Binary += ".exe"
	}
	base := fmt.Sprintf("kubectl-session_%s_%s_%s", version, p.OS, p.Arch)
	files := []struct {
		name, source string
		mode         int64
	}{{a.Binary, binary, 0o755}, {"LICENSE", license, 0o644}}
	var buf bytes.Buffer
	if p.OS == "windows" {
		a.Name = base + ".zip"
		zw := zip.NewWriter(&buf)
		for _, f := range files {
			content, err := os.ReadFile(f.source)
			if err != nil {
				return a, err
			}
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: modified.UTC()}
			h.SetMode(os.FileMode(f.mode))
			w, err := zw.CreateHeader(h)
			if err != nil {
				return a, err
			}
			if _, err := w.Write(content); err != nil {
				return a, err
			}
		}
		if err := zw.Close(); err != nil {
			return a, err
		}
	} else {
		a.Name = base + ".tar.gz"
		gz := gzip.NewWriter(&buf)
		gz.ModTime = modified.UTC()
		tw := tar.NewWriter(gz)
		for _, f := range files {
			content, err := os.ReadFile(f.source)
			if err != nil {
				return a, err
			}
			if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(content)),
				ModTime: modified.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
				return a, err
			}
			if _, err := tw.Write(content); err != nil {
				return a, err
			}
		}
		if err := tw.Close(); err != nil {
			return a, err
		}
		if err := gz.Close(); err != nil {
			return a, err
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	a.SHA256 = hex.EncodeToString(sum[:])
	a.Path = filepath.Join(dir, a.Name)
	return a, os.WriteFile(a.Path, buf.Bytes(), 0o644)
}

// WriteSHA256Sums writes the archives' digests in sha256sum's format, which
// `sha256sum -c SHA256SUMS` checks.
func WriteSHA256Sums(path string, files map[string]string) error {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(&b, "%s  %s\n", files[name], name)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// krewPlugin is krew's Plugin manifest (krew.googlecontainertools.github.com/v1alpha2).
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// KrewManifest is the krew Plugin manifest of the archives, each
// downloaded from downloadURL/<archive name>: what goes into krew's index,
// or `kubectl krew install --manifest=... --archive=...` installs offline.
func KrewManifest(version, downloadURL string, archives []Archive) ([]byte, error) {
	var p krewPlugin
	p.APIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	p.Kind = "Plugin"
	p.Metadata.Name = KrewName
	p.Spec.Version = version
	p.Spec.Homepage = "https://github.com/clustergate/clustergate"
	p.Spec.ShortDescription = "Open, approve and use break-glass sessions"
	p.Spec.Description = "Opens, lists, approves, denies, extends and revokes clustergate's break-glass\n" +
		"Sessions to Gardener Shoots and clusters, writes a session's kubeconfig for\n" +
		"sessions/proxy, and replays what a session did. Needs clustergate installed\n" +
		"in the cluster kubectl talks to.\n"
	for _, a := range archives {
		var pl krewPlatform
		pl.Selector.MatchLabels = map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}
		pl.URI = strings.TrimSuffix(downloadURL, "/") + "/" + a.Name
		pl.SHA256 = a.SHA256
		pl.Bin = a.Binary
		p.Spec.Platforms = append(p.Spec.Platforms, pl)
	}
	return yaml.Marshal(p)
}
