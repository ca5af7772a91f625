// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/release"
)

// export copies every tag of the release's repositories (the images, the
// chart, and cosign's sha256-<digest>.sig and .att) from registry into an
// OCI layout at dir, which a landscape copies to its own registry.
func export(ctx context.Context, registry string, repos []name.Repository, dir string) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, repo := range repos {
		tags, err := remote.List(repo, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return err
		}
		for _, t := range tags {
			ref := repo.Tag(t)
			named := layout.WithAnnotations(map[string]string{images.RefName: strings.TrimPrefix(ref.String(), registry+"/")})
			desc, err := remote.Get(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
			if err != nil {
				return fmt.Errorf("exporting %s: %w", ref, err)
			}
			// cosign keeps an image's signature and attestation bundles
			// as OCI referrers, which a registry without the referrers
			// API lists in an index tagged sha256-<digest>.
			if desc.MediaType.IsIndex() {
				index, indexErr := desc.ImageIndex()
				if indexErr != nil {
					return indexErr
				}
				err = p.AppendIndex(index, named)
			} else {
				image, imageErr := desc.Image()
				if imageErr != nil {
					return imageErr
				}
				err = p.AppendImage(image, named)
			}
			if err != nil {
				return fmt.Errorf("exporting %s: %w", ref, err)
			}
		}
	}
	return nil
}

// writeSums writes SHA256SUMS over every file of the release but itself.
func writeSums(dir string) error {
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "cosign.key" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		sums[rel], err = release.FileSHA256(path)
		return err
	})
	if err != nil {
		return err
	}
	return release.WriteSHA256Sums(filepath.Join(dir, "SHA256SUMS"), sums)
}
