// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// installIstioCRDs installs Istio's CRDs, from the istio.io/api module the
// server is built with, so that sessions get AuthorizationPolicies.
func (cp *ControlPlane) installIstioCRDs(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "istio.io/api")
	cmd.Dir = cp.opts.RepoRoot
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("locating istio.io/api: %w", err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil {
		return err
	}
	// The CRDs are too large for client-side apply's annotation.
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "--server-side", "-f",
		filepath.Join(module.Dir, "kubernetes", "customresourcedefinitions.gen.yaml")); err != nil {
		return err
	}
	_, err = cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/authorizationpolicies.security.istio.io")
	return err
}
