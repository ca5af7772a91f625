// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer: a directory, or a regular file whose
// content comes from Source (a file on disk, read when the layer is built)
// or from Content.
type File struct {
	// Path is the entry's absolute path in the image.
	Path string
	// Mode holds the permission bits (and sticky bit) only.
	Mode int64
	// UID and GID own the entry.
	UID, GID int
	// Dir makes the entry a directory.
	Dir bool
	// Source is a file on disk to copy; Content is used when it is empty.
	Source  string
	Content []byte
}

// Layer is a set of entries and the history line that says what they are.
type Layer struct {
	// CreatedBy goes into the image's history, as a Dockerfile step would.
	CreatedBy string
	Files     []File
}

// Spec describes one image: its layers, its configuration and where it is
// pushed. Build turns it into an image.
type Spec struct {
	// Repository is the image's name without registry, e.g.
	// "clustergate/etcd"; Tags are pushed to it.
	Repository string
	Tags       []string
	// Architecture is a GOARCH; the OS is always linux.
	Architecture string
	Layers       []Layer
	Entrypoint   []string
	Env          []string
	WorkingDir   string
	// User is "UID:GID", numeric, so that a runtime can check runAsNonRoot
	// without reading /etc/passwd.
	User   string
	Labels map[string]string
}

// epoch is every entry's and the image's creation time: the same inputs
// give the same digests, so that a rebuild with nothing changed pushes
// nothing.
var epoch = time.Unix(0, 0).UTC()

// Build assembles the image of a spec: OCI media types, one layer per
// Layer, the configuration and history.
func Build(spec Spec) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	var adds []mutate.Addendum
	for _, l := range spec.Layers {
		layer, err := buildLayer(l.Files)
		if err != nil {
			return nil, fmt.Errorf("%s: layer %q: %w", spec.Repository, l.CreatedBy, err)
		}
		adds = append(adds, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: l.CreatedBy},
		})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Repository, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = spec.Architecture
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Env = spec.Env
	cfg.Config.WorkingDir = spec.WorkingDir
	cfg.Config.User = spec.User
	cfg.Config.Labels = spec.Labels
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}

// buildLayer writes the entries, parents first, into a gzipped tar held in
// memory: compressing once here keeps go-containerregistry from
// compressing again for the digest and for each write.
func buildLayer(files []File) (v1.Layer, error) {
	files = append([]File(nil), files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("path %q is not absolute and clean", f.Path)
		}
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		content := f.Content
		if f.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			hdr.Typeflag = tar.TypeReg
			if f.Source != "" {
				var err error
				if content, err = os.ReadFile(f.Source); err != nil {
					return nil, err
				}
			}
			hdr.Size = int64(len(content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	compressed := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
