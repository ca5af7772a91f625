// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clustergate/clustergate/internal/chart"
	"github.com/clustergate/clustergate/internal/release"
)

// writeDescriptor writes the OCM component descriptor of the release:
// the images and the chart by the reference and digest a landscape pulls
// them with (where artifacts/ names them when the release pushed to a
// registry of its own), the manifests and plugin archives by the URL
// they are downloaded from and their SHA-256.
func writeDescriptor(o options, revision string, committed time.Time, m manifest, imgs []pushedImage, archives []release.Archive) (string, error) {
	var resources []release.Artifact
	for _, img := range imgs {
		relation := "external" // etcd: shipped, not built here
		if strings.HasSuffix(img.Artifact, "/clustergate-apiserver") {
			relation = "local"
		}
		resources = append(resources, release.Artifact{Name: filepath.Base(img.Artifact), Version: img.tag.TagStr(), Type: "ociImage",
			Relation: relation, Access: release.Access{Type: "ociArtifact",
				ImageReference: img.repository(o.registry) + ":" + img.tag.TagStr() + "@" + img.Digest},
			Digest: release.OCIDigest(img.Digest)})
	}
	chartRepo := m.Chart.tag.Context().Name()
	if o.registry == "" {
		chartRepo = "ghcr.io/" + chart.Repository + "/clustergate"
	}
	resources = append(resources, release.Artifact{Name: "chart", Version: o.version, Type: "helmChart", Relation: "local",
		Access: release.Access{Type: "ociArtifact", ImageReference: chartRepo + ":" + m.Chart.tag.TagStr() + "@" + m.Chart.Digest},
		Digest: release.OCIDigest(m.Chart.Digest)})
	download := func(name, file, kind string, identity map[string]string) error {
		sum, err := release.FileSHA256(filepath.Join(o.output, file))
		if err != nil {
			return err
		}
		resources = append(resources, release.Artifact{Name: name, ExtraIdentity: identity, Version: o.version, Type: "blob", Relation: "local",
			Access: release.Access{Type: "http", URL: o.downloadURL + "/" + filepath.Base(file), MediaType: kind}, Digest: release.BlobDigest(sum)})
		return nil
	}
	for i, file := range m.Manifests {
		if err := download("manifest", file, "application/x-yaml", map[string]string{"layout": release.Layouts[i].Name}); err != nil {
			return "", err
		}
	}
	for _, a := range archives {
		kind := "application/gzip"
		if strings.HasSuffix(a.Name, ".zip") {
			kind = "application/zip"
		}
		if err := download("kubectl-session", filepath.Join("plugin", a.Name), kind,
			map[string]string{"os": a.Platform.OS, "architecture": a.Platform.Arch}); err != nil {
			return "", err
		}
	}
	out, err := release.DescriptorFor(o.version, revision, committed, o.registry, resources).Marshal()
	if err != nil {
		return "", err
	}
	return "component-descriptor.yaml", os.WriteFile(filepath.Join(o.output, "component-descriptor.yaml"), out, 0o644)
}
