// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clustergate/clustergate/internal/localcluster"
)

func TestShootKubeconfigFromGardener(t *testing.T) {
	req := `{"apiVersion":"authentication.gardener.cloud/v1alpha1","kind":"AdminKubeconfigRequest","spec":{"expirationSeconds":600}}`
	out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(req), "create", "--raw",
		fmt.Sprintf("/apis/core.gardener.cloud/v1beta1/namespaces/garden-%s/shoots/%s/adminkubeconfig", localcluster.Project, localcluster.Shoot), "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Status struct {
			Kubeconfig []byte `json:"kubeconfig"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shoot-admin.kubeconfig")
	if err := os.WriteFile(path, resp.Status.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if who := kubectlAs(t, path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"); !strings.Contains(who, "gardener.cloud:system:admins") {
		t.Errorf("shoot identity groups = %s", who)
	}
	kubectlAs(t, path, "get", "secrets", "-n", "kube-system")
}
