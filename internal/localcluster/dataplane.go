// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DataPlaneAudience is the audience of the JWTs the data plane accepts:
// `kubectl create token SA --audience clustergate-data-plane` on the
// garden mints one.
const DataPlaneAudience = "clustergate-data-plane"

// DataPlaneUserPrefix starts the user names the data plane maps from the
// garden issuer's tokens: a service account's token names
// dataplane:system:serviceaccount:<namespace>:<name> there, never a garden
// user, as with any issuer apart from the garden's.
const DataPlaneUserPrefix = "dataplane:"

// PolicyNamespace holds the sessions' Istio AuthorizationPolicies, as the
// data-plane component's gateway namespace does.
const PolicyNamespace = "clustergate-data-plane"

// DemoSRE is the service account, in the namespace demo, whose token the
// main clustergate's exec plugin fetches: the data-plane user of make run
// (a stand-in for a person logging in with kubelogin).
const DemoSRE = "sre"

// tokenExecPlugin is a kubectl exec credential plugin that stands in for
// kubelogin: it asks the garden for a token of a service account, as an
// OIDC provider would hand one to its user, and prints it as an
// ExecCredential. Arguments: the garden kubeconfig it asks with, the
// service account's namespace and name, the audience.
const tokenExecPlugin = `#!/bin/sh
set -eu
token=$(kubectl --kubeconfig "$1" -n "$2" create token "$3" --audience "$4" --duration 10m)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$token"
`

// setUpDataPlane makes the garden kube-apiserver's service-account issuer
// the data plane's: it lets anyone read the issuer's discovery document and
// keys, and writes the AuthenticationConfiguration that accepts its tokens
// for DataPlaneAudience, with the service account's full name after
// DataPlaneUserPrefix as user name. The sessions' policies go to
// PolicyNamespace, with the component's grant there. Session kubeconfigs of
// data-plane owners point at the data plane, with the exec plugin that
// fetches DemoSRE's token. It returns the clustergate flags of the data plane.
func (cp *ControlPlane) setUpDataPlane(ctx context.Context) ([]string, error) {
	if err := cp.applyFixture(ctx, cp.AdminKubeconfig, "issuer-discovery.yaml"); err != nil {
		return nil, err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "create", "namespace", PolicyNamespace); err != nil {
		return nil, err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "-f",
		filepath.Join(cp.opts.RepoRoot, "artifacts", "components", "data-plane", "rbac.yaml")); err != nil {
		return nil, err
	}
	ca := strings.ReplaceAll(strings.TrimSpace(string(cp.certs.gardenCA.CertPEM())), "\n", "\n      ")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [%s]
    certificateAuthority: |
      %s
  claimMappings:
    username: {claim: sub, prefix: %q}
`, issuerURL(cp.ports.garden), DataPlaneAudience, ca, DataPlaneUserPrefix)
	file := filepath.Join(cp.opts.Dir, "data-plane-authentication.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		return nil, err
	}
	cp.TokenExecPlugin = filepath.Join(cp.opts.Dir, "token-exec.sh")
	if err := os.WriteFile(cp.TokenExecPlugin, []byte(tokenExecPlugin), 0o700); err != nil {
		return nil, err
	}
	cp.DataPlaneURL = fmt.Sprintf("https://127.0.0.1:%d", cp.ports.dataPlane)
	cp.DataPlaneIssuer = issuerURL(cp.ports.garden)
	cp.DataPlaneCAFile = cp.certs.aggregatedCA.CertFile
	return []string{
		fmt.Sprintf("--data-plane-address=127.0.0.1:%d", cp.ports.dataPlane),
		"--data-plane-authentication-config=" + file,
		"--data-plane-external-url=" + cp.DataPlaneURL, "--data-plane-ca-file=" + cp.DataPlaneCAFile,
		"--kubeconfig-exec-command=" + cp.TokenExecPlugin, "--kubeconfig-exec-arg=" + cp.AdminKubeconfig,
		"--kubeconfig-exec-arg=demo", "--kubeconfig-exec-arg=" + DemoSRE, "--kubeconfig-exec-arg=" + DataPlaneAudience,
		"--istio-namespace=" + PolicyNamespace,
	}, nil
}
