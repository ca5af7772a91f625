// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Layout is a shipped install layout: a kustomization of artifacts/ and
// the components it is released with.
type Layout struct {
	// Name names the rendered file, clustergate-<name>.yaml.
	Name string
	// Resources and Components are paths under artifacts/.
	Resources, Components []string
}

// Layouts are the layouts a release renders, as docs/operations.md
// describes them: the single replica, the highly available one bare and
// with cert-manager's certificates, and the two halves of the
// gardener-operator landscape.
var Layouts = []Layout{
	{Name: "single", Resources: []string{"."}},
	{Name: "ha", Resources: []string{"overlays/ha"}},
	{Name: "ha-cert-manager", Resources: []string{"overlays/ha"}, Components: []string{"components/cert-manager"}},
	{Name: "virtual-garden-runtime", Resources: []string{"overlays/ha"},
		Components: []string{"components/cert-manager", "components/virtual-garden-runtime"}},
	{Name: "virtual-garden", Resources: []string{"overlays/virtual-garden"}},
}

// Image is an image the manifests name, and where the release put it.
type Image struct {
	// Name is the reference the artifacts carry, without tag.
	Name string
	// NewName is the repository it was pushed to, Digest its digest.
	NewName, Digest string
}

// RenderLayout renders layout of the artifacts directory with kubectl
// kustomize (kubectl's built-in kustomize, as users apply them) through
// an overlay in work that pins images by digest.
func RenderLayout(ctx context.Context, kubectl, artifacts, work string, layout Layout, images []Image) ([]byte, error) {
	dir := filepath.Join(work, layout.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// kustomize reads resources and components relative to the overlay.
	rel := func(p string) (string, error) { return filepath.Rel(dir, filepath.Join(artifacts, p)) }
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range layout.Resources {
		p, err := rel(r)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "- %s\n", p)
	}
	if len(layout.Components) > 0 {
		b.WriteString("components:\n")
		for _, c := range layout.Components {
			p, err := rel(c)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	b.WriteString("images:\n")
	for _, img := range images {
		fmt.Fprintf(&b, "- name: %s\n  newName: %s\n  digest: %s\n", img.Name, img.NewName, img.Digest)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize of layout %s: %w: %s", layout.Name, err, stderr.String())
	}
	// An image the artifacts name in a field kustomize does not know
	// would stay unpinned.
	for _, img := range images {
		if strings.Contains(string(out), img.Name+":") {
			return nil, fmt.Errorf("layout %s still names %s by tag", layout.Name, img.Name)
		}
	}
	return out, nil
}
