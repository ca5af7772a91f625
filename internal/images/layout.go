// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RefName is the annotation of an OCI layout's index that names an image:
// here always "<repository>:<tag>", so that a layout says where each of
// its images is pushed.
const RefName = "org.opencontainers.image.ref.name"

// Tagged is a built image and the names it is pushed under.
type Tagged struct {
	Spec  Spec
	Image v1.Image
}

// WriteLayout writes the images into an OCI image layout at dir, one index
// entry per repository and tag, replacing the index of an earlier run.
// Blobs already there are not written again, and blobs no image refers to
// any more are removed, so that the layout holds exactly the images.
func WriteLayout(dir string, images []Tagged) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, t := range images {
		for _, tag := range t.Spec.Tags {
			if err := p.AppendImage(t.Image,
				layout.WithAnnotations(map[string]string{RefName: t.Spec.Repository + ":" + tag}),
				layout.WithPlatform(v1.Platform{OS: "linux", Architecture: t.Spec.Architecture}),
			); err != nil {
				return fmt.Errorf("%s:%s: %w", t.Spec.Repository, tag, err)
			}
		}
		digests, err := blobDigests(t.Image)
		if err != nil {
			return err
		}
		for _, d := range digests {
			keep[d.Hex] = true
		}
	}
	return prune(filepath.Join(dir, "blobs", "sha256"), keep)
}

// blobDigests are the manifest, configuration and layers of an image.
func blobDigests(img v1.Image) ([]v1.Hash, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	all := []v1.Hash{d, m.Config.Digest}
	for _, l := range m.Layers {
		all = append(all, l.Digest)
	}
	return all, nil
}

func prune(blobs string, keep map[string]bool) error {
	entries, err := os.ReadDir(blobs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(blobs, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Pushed is an image pushed to a registry under one reference.
type Pushed struct {
	Reference name.Tag
	Digest    v1.Hash
}

// PushLayout pushes every image and image index of the OCI layout at dir
// to a registry, under the repository and tag its index names, prefixed
// with registry (host:port, and optionally a path: "127.0.0.1:5000",
// "ghcr.io/acme"). Loopback registries are spoken to over plain HTTP; credentials come from
// ~/.docker/config.json, as docker login writes them. Blobs the registry
// holds already are not sent again.
func PushLayout(ctx context.Context, dir, registry string) ([]Pushed, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	index, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var pushed []Pushed
	for _, desc := range m.Manifests {
		ref := desc.Annotations[RefName]
		if !strings.Contains(ref, ":") {
			return nil, fmt.Errorf("%s: image %s has no %s of the form repository:tag", dir, desc.Digest, RefName)
		}
		tag, err := name.NewTag(registry+"/"+ref, name.StrictValidation)
		if err != nil {
			return nil, err
		}
		opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
		if desc.MediaType.IsIndex() {
			// An index: what a release's layout holds besides images,
			// cosign's signatures and attestations of an image as OCI
			// referrers under the tag sha256-<digest>.
			idx, idxErr := index.ImageIndex(desc.Digest)
			if idxErr != nil {
				return nil, idxErr
			}
			err = remote.WriteIndex(tag, idx, opts...)
		} else {
			img, imgErr := index.Image(desc.Digest)
			if imgErr != nil {
				return nil, imgErr
			}
			err = remote.Write(tag, img, opts...)
		}
		if err != nil {
			return nil, fmt.Errorf("pushing %s: %w", tag, err)
		}
		pushed = append(pushed, Pushed{Reference: tag, Digest: desc.Digest})
	}
	return pushed, nil
}
