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

// DemoNamespace holds the demo's objects: the RBAC bindings of its users,
// the example session and GardenerClusterKubeconfig, and the data-plane
// session with its service account DemoSRE.
const DemoNamespace = "demo"

// DemoClustergateArgs are the flags `make run` adds to clustergate: admin
// sessions wait for a second person, so that the guide can walk through an
// approval. The guide's test starts its control plane with the same flags,
// so that it runs the guide against what users get.
var DemoClustergateArgs = []string{"--session-approval-groups=admin"}

// DemoScopedNamespace is the namespace of the shoot in which alice may
// open sessions of the level debugger (artifacts/examples/session-access.yaml).
const DemoScopedNamespace = "shop"

// DemoSREUser is the data plane's name of the service account DemoSRE, the
// owner of the data-plane example session.
const DemoSREUser = DataPlaneUserPrefix + "system:serviceaccount:" + DemoNamespace + ":" + DemoSRE

// Files the demo writes into the control plane's directory, which the
// guide's commands name.
const (
	// lookAroundKubeconfig reaches the shoot through alice's example
	// session, completed with alice's certificate.
	lookAroundKubeconfig = "look-around.kubeconfig"
	// forSREKubeconfig reaches the shoot through the data plane, with the
	// exec plugin that fetches DemoSRE's token.
	forSREKubeconfig = "for-sre.kubeconfig"
)

// demoBindings are the users of the guide: alice may open sessions in
// DemoNamespace (her own, viewer on every target there, and admin, which an
// approver must approve) and bob approves; carol, bound to nothing, is the
// guide's refused user.
var demoBindings = []struct{ name, role, user string }{
	{"alice-sessions", "clustergate:session-user", "alice"},
	{"alice-targets", "clustergate:target-viewer", "alice"},
	{"alice-admin-targets", "clustergate:target-admin", "alice"},
	{"bob-approves", "clustergate:session-approver", "bob"},
	// bob audits too: he reads what sessions recorded.
	{"bob-audits", "clustergate:session-auditor", "bob"},
	// The data plane's user gets viewer on the targets only: it has no
	// identity in the garden at all.
	{"sre-targets", "clustergate:target-viewer", DemoSREUser},
}

// Demo creates what the guide (Guide) starts from, on a control plane that
// runs with DemoClustergateArgs: the namespace DemoNamespace with the
// users' bindings, the examples of artifacts/examples (the session as
// alice), the service account DemoSRE and a session assigned to its
// data-plane name, and the kubeconfigs of both sessions in the control
// plane's directory. It returns once both sessions and the example
// GardenerClusterKubeconfig are Ready, as the guide's first commands show.
// The installed way (Options.Installed) has no data plane: there Demo
// leaves the data-plane session out, as Guide does its commands.
func (cp *ControlPlane) Demo(ctx context.Context) error {
	admin := func(args ...string) error {
		_, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, append([]string{"-n", DemoNamespace}, args...)...)
		return err
	}
	if err := admin("create", "namespace", DemoNamespace); err != nil {
		return err
	}
	for _, b := range demoBindings {
		if err := admin("create", "rolebinding", b.name, "--clusterrole="+b.role, "--user="+b.user); err != nil {
			return err
		}
	}
	if err := cp.demoScope(ctx, admin); err != nil {
		return err
	}
	if err := admin("create", "serviceaccount", DemoSRE); err != nil {
		return err
	}
	alice, err := cp.UserKubeconfig("alice", "sre")
	if err != nil {
		return err
	}
	// The example session is alice's, the owner stamped from its creator;
	// the admin keeps the example kubeconfig.
	for example, kubeconfig := range map[string]string{"session.yaml": alice, "gardenerclusterkubeconfig.yaml": cp.AdminKubeconfig} {
		out, err := cp.Kubectl(ctx, kubeconfig, nil, "-n", DemoNamespace, "apply", "--server-side", "-f",
			filepath.Join(cp.opts.RepoRoot, "artifacts", "examples", example))
		if err != nil {
			return err
		}
		cp.opts.Logf("%s", strings.TrimSpace(string(out)))
	}
	ready := []string{"session/look-around"}
	if !cp.opts.Installed {
		// The data plane's example: a session the admin assigned to
		// DemoSRE's data-plane name, which has no RBAC on the garden. Its
		// kubeconfig, from sessions/kubeconfig, points at the data plane
		// and fetches the token with the exec plugin: no credential in the
		// file. The installed way has no data plane (GuideValues).
		if err := cp.forSRE(ctx); err != nil {
			return err
		}
		ready = append(ready, "session/for-sre")
	}
	for _, r := range ready {
		if err := admin("wait", "--for=condition=Ready", "--timeout=60s", r); err != nil {
			return err
		}
	}
	if err := admin("wait", "--for=jsonpath={.status.state}=Ready", "--timeout=60s", "gardenerclusterkubeconfig/local"); err != nil {
		return err
	}
	// alice's kubeconfig of her session, completed with her certificate as
	// her exec plugin would, for a first look through the proxy.
	if err := cp.SessionKubeconfig(ctx, alice, DemoNamespace, "look-around", filepath.Join(cp.opts.Dir, lookAroundKubeconfig)); err != nil {
		return err
	}
	if cp.opts.Installed {
		return nil
	}
	forSREConfig, err := cp.sessionKubeconfig(ctx, cp.AdminKubeconfig, DemoNamespace, "for-sre")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cp.opts.Dir, forSREKubeconfig), forSREConfig, 0o600)
}

// demoScope lets alice open debugger sessions in DemoScopedNamespace of
// the shoot, which it creates, and nowhere else: a grant on the name
// <shoot>/<namespace> of the virtual resource shoots.
func (cp *ControlPlane) demoScope(ctx context.Context, admin func(...string) error) error {
	if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "create", "namespace", DemoScopedNamespace); err != nil {
		return err
	}
	if err := admin("create", "role", "shop-debugger", "--verb=debugger", "--resource=shoots.clustergate.dev",
		"--resource-name="+Shoot+"/"+DemoScopedNamespace); err != nil {
		return err
	}
	return admin("create", "rolebinding", "alice-shop-debugger", "--role=shop-debugger", "--user=alice")
}

// forSRE creates the data plane's example session.
func (cp *ControlPlane) forSRE(ctx context.Context) error {
	forSRE := fmt.Sprintf(`{"apiVersion":"clustergate.dev/v1alpha1","kind":"Session","metadata":{"name":"for-sre","namespace":%q},
"spec":{"ttl":"1h","owner":{"username":%q},"accessLevel":{"group":"viewer"},"target":{"shoot":{"name":%q}}}}`, DemoNamespace, DemoSREUser, Shoot)
	_, err := cp.Kubectl(ctx, cp.AdminKubeconfig, []byte(forSRE), "apply", "-f", "-")
	return err
}
