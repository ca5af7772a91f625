// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"os"
	"path/filepath"
	"strings"
)

// DirEnv names the environment variable that moves the local control
// plane's directory away from DefaultDir's _output/local: hack/local-up
// starts it there and hack/local-user finds it there, so the guide's
// `hack/local-user.sh` lines work for any directory.
const DirEnv = "LOCAL_UP_DIR"

// DefaultDir is the directory of `make run`'s control plane in the checkout
// root: DirEnv's value, or _output/local.
func DefaultDir(root string) string {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	return filepath.Join(root, "_output", "local")
}

// aggregatedCAName is the CA of the aggregated servers and of the data
// plane, in pki/ as NAME.crt: the guide's curl verifies the data plane with it.
const aggregatedCAName = "aggregated-ca"

// Step is one line of the guide: a command as a user types it, from the
// checkout's root, and what its comment promises.
type Step struct {
	// Section, when set, starts a group of steps; it is printed as comment
	// lines before the step.
	Section string
	// Command is the shell line.
	Command string
	// Comment says what the command does or answers; printed after it.
	Comment string
	// Promise is the comment's claim, in the form the guide's test checks.
	Promise Promise
}

// Promise is the outcome a step's comment promises.
type Promise struct {
	// Refused says the command exits non-zero: the server refuses it.
	Refused bool
	// Says are texts its output, stdout and stderr together, contains.
	Says []string
}

// GuideValues are what the guide's commands depend on.
type GuideValues struct {
	// Dir is the control plane's directory as the user names it, relative
	// to the checkout's root: _output/local for `make run`.
	Dir string
	// NoDataPlane leaves the data plane's example out: the installed way
	// (INSTALLED=1 make run) applies the HA layout without the data-plane
	// component, which needs Istio.
	NoDataPlane bool
	// NoAccessConfig leaves least privilege out: the installed way runs
	// without make run's --session-access-config, so without the debugger
	// level and the deny rules.
	NoAccessConfig bool
}

// READMEGuideValues are `make run`'s values, with which README.md shows the
// guide.
var READMEGuideValues = GuideValues{Dir: "_output/local"}

// GuideValues are the guide's values for this control plane, its directory
// relative to the checkout's root.
func (cp *ControlPlane) GuideValues() GuideValues {
	dir, err := filepath.Rel(cp.opts.RepoRoot, cp.opts.Dir)
	if err != nil || strings.HasPrefix(dir, "..") {
		dir = cp.opts.Dir
	}
	return GuideValues{Dir: filepath.ToSlash(dir), NoDataPlane: cp.opts.Installed, NoAccessConfig: cp.opts.Installed}
}

// Guide is what to type next on a control plane that runs with
// DemoClustergateArgs and that Demo set up, in order: `make run` prints it,
// README.md shows it (with READMEGuideValues; a test compares the two) and
// the end-to-end test runs it and checks every promise. A step may rely on
// the ones before it (exported variables, approvals).
func Guide(v GuideValues) []Step {
	alice, bob, carol := `"$(hack/local-user.sh alice sre)"`, `"$(hack/local-user.sh bob)"`, `"$(hack/local-user.sh carol)"`
	// The plugin's lines name the kubeconfigs by variable: they are long
	// enough without.
	asAlice := ` --kubeconfig "$ALICE" -n ` + DemoNamespace
	sessions := Step{Command: "kubectl -n demo get sess,gck -o wide", Comment: "alice's look-around and for-sre, Ready; gck local, Ready",
		Promise: Promise{Says: []string{"look-around", "alice", "for-sre", DemoSREUser, "Ready"}}}
	if v.NoDataPlane {
		sessions = Step{Command: sessions.Command, Comment: "alice's look-around, Ready; gck local, Ready",
			Promise: Promise{Says: []string{"look-around", "alice", "Ready"}}}
	}
	steps := []Step{
		{Section: "The garden, as system:masters; clustergate is registered there through its APIService:",
			Command: "export KUBECONFIG=" + v.Dir + "/admin.kubeconfig", Comment: "the admin's kubeconfig"},
		{Command: "kubectl api-resources --api-group=clustergate.dev", Comment: "sessions (sess), gardenerclusterkubeconfigs (gck)",
			Promise: Promise{Says: []string{"sessions", "sess", "gardenerclusterkubeconfigs", "gck"}}},
		{Command: "kubectl get clustergate -A", Comment: "both kinds, in every namespace",
			Promise: Promise{Says: []string{"session.clustergate.dev/look-around", "gardenerclusterkubeconfig.clustergate.dev/local"}}},
		sessions,
		{Command: "kubectl explain session.spec", Comment: "from clustergate's OpenAPI",
			Promise: Promise{Says: []string{"ttl", "accessLevel", "target"}}},

		{Section: `The shoot "local" (Gardener project "local"), directly and through alice's session
demo/look-around, whose kubeconfig make run completed with alice's certificate:`,
			Command: "kubectl --kubeconfig=" + v.Dir + "/shoot.kubeconfig get ns", Comment: "as system:masters",
			Promise: Promise{Says: []string{"kube-system"}}},
		{Command: "kubectl --kubeconfig=" + v.Dir + "/" + lookAroundKubeconfig + " get ns", Comment: "through the session's proxy",
			Promise: Promise{Says: []string{"kube-system"}}},

		{Section: "Users: hack/local-user.sh NAME [GROUP...] prints the path of a garden kubeconfig for them:",
			Command: "kubectl --kubeconfig " + alice + " -n demo get sessions", Comment: "alice, a session user in demo: allowed",
			Promise: Promise{Says: []string{"look-around"}}},
		{Command: "kubectl --kubeconfig " + bob + " -n demo get sessions", Comment: "bob, an approver in demo: allowed",
			Promise: Promise{Says: []string{"look-around"}}},
		{Command: "kubectl --kubeconfig " + carol + " -n demo get sessions", Comment: "carol, bound to nothing: 403 Forbidden",
			Promise: Promise{Refused: true, Says: []string{"(Forbidden)", `User "carol" cannot list`}}},
	}
	if !v.NoDataPlane {
		steps = append(steps, []Step{
			{Section: `The data plane, whose JWTs the garden's service-account issuer signs. The session
demo/for-sre belongs to ` + DemoSREUser + `, the data plane's name of
the service account demo/sre, which has no RBAC on the garden. Its kubeconfig
carries no credential, only an exec plugin that fetches the account's token:`,
				Command: "kubectl --kubeconfig " + v.Dir + "/" + forSREKubeconfig + " get ns", Comment: "the shoot, through the data plane",
				Promise: Promise{Says: []string{"kube-system"}}},
			{Command: "TOKEN=$(kubectl -n demo create token sre --audience " + DataPlaneAudience + ")", Comment: "or by hand"},
			{Command: "SERVER=$(kubectl --kubeconfig " + v.Dir + "/" + forSREKubeconfig + " config view -o jsonpath='{.clusters[0].cluster.server}')",
				Comment: "the session on the data plane"},
			{Command: "curl -sS --cacert " + v.Dir + "/pki/" + aggregatedCAName + ".crt -H \"Authorization: Bearer $TOKEN\" \"$SERVER/api/v1/namespaces/kube-system\"",
				Comment: "the shoot's namespace, as JSON",
				Promise: Promise{Says: []string{`"kind": "Namespace"`, `"name": "kube-system"`}}},
		}...)
	}
	steps = append(steps, []Step{
		{Section: "Admin sessions wait for approval (--session-approval-groups=admin); with the plugin:",
			Command: "export PATH=$PWD/_output/bin:$PATH", Comment: "kubectl finds kubectl-session here"},
		{Command: "ALICE=" + alice + " BOB=" + bob, Comment: "their kubeconfigs"},
		{Command: "kubectl session open shoot/local" + asAlice + " --access admin --ttl 15m --reason INC-1 --name fix --wait",
			Comment: "alice asks for admin on the shoot: it waits for approval", Promise: Promise{Says: []string{"fix", "waits for approval"}}},
		{Command: "kubectl session approve fix" + asAlice, Comment: "403: alice is no approver",
			Promise: Promise{Refused: true, Says: []string{`User "alice" cannot update resource "sessions/approval"`}}},
		{Command: `kubectl session approve fix --kubeconfig "$BOB" -n demo --reason "INC-1 is real"`,
			Comment: "bob approves", Promise: Promise{Says: []string{"approved by bob"}}},
		{Command: "kubectl session kubeconfig fix" + asAlice + " --wait --kubeconfig-out " + v.Dir + "/fix.kubeconfig",
			Comment: "once Ready, its kubeconfig, with alice's certificate", Promise: Promise{Says: []string{"kubeconfig written to " + v.Dir + "/fix.kubeconfig"}}},
		{Command: "kubectl --kubeconfig " + v.Dir + "/fix.kubeconfig auth can-i '*' '*'", Comment: "yes: admin on the shoot",
			Promise: Promise{Says: []string{"yes"}}},
		{Command: "kubectl session list" + asAlice + " -o wide", Comment: "EXPIRES-AT, APPROVAL, REASON",
			Promise: Promise{Says: []string{"fix", "Approved by bob", "INC-1"}}},
		{Command: "kubectl session extend fix 10m" + asAlice, Comment: "waits for approval again",
			Promise: Promise{Says: []string{"extension by 10m0s waits for approval"}}},
	}...)
	if !v.NoAccessConfig {
		steps = append(steps, Step{Command: "kubectl --kubeconfig " + v.Dir + "/fix.kubeconfig -n kube-system get secrets",
			Comment: "403 even for admin: the deny rule no-secrets-in-kube-system",
			Promise: Promise{Refused: true, Says: []string{"denied by clustergate rule no-secrets-in-kube-system"}}})
	}
	steps = append(steps, Step{Command: "kubectl session revoke fix" + asAlice, Comment: "ends it, and every connection through it",
		Promise: Promise{Says: []string{"session fix revoked"}}})
	if v.NoAccessConfig {
		return steps
	}
	return append(steps, []Step{
		{Section: `Least privilege (make run's --session-access-config is artifacts/examples/session-access.yaml):
alice may open the level debugger (pods, their logs and exec) in namespace ` + DemoScopedNamespace + ` of the shoot, and nothing else:`,
			Command: "kubectl session open shoot/local" + asAlice + " --access debugger --namespaces " + DemoScopedNamespace +
				" --ttl 15m --name shop --wait --kubeconfig-out " + v.Dir + "/shop.kubeconfig",
			Comment: "Ready at once: debugger needs no approval", Promise: Promise{Says: []string{"kubeconfig written to " + v.Dir + "/shop.kubeconfig"}}},
		{Command: "kubectl --kubeconfig " + v.Dir + "/shop.kubeconfig get pods", Comment: "in " + DemoScopedNamespace + ", the kubeconfig's namespace",
			Promise: Promise{Says: []string{"No resources found in " + DemoScopedNamespace + " namespace"}}},
		{Command: "kubectl --kubeconfig " + v.Dir + "/shop.kubeconfig get pods -A", Comment: "403 from clustergate, before the shoot sees it",
			Promise: Promise{Refused: true, Says: []string{"is scoped to namespaces " + DemoScopedNamespace}}},
		{Command: "kubectl --kubeconfig " + v.Dir + "/shop.kubeconfig get secrets", Comment: "403 from the shoot's RBAC: debugger reads no Secrets",
			Promise: Promise{Refused: true, Says: []string{`cannot list resource "secrets"`}}},
		{Command: "kubectl session open shoot/local" + asAlice + " --access debugger --namespaces default --ttl 15m",
			Comment: "403: alice may not open debugger in default",
			Promise: Promise{Refused: true, Says: []string{`may not open "debugger" sessions to namespace default`}}},
	}...)
}

// RenderGuide is the guide as `make run` prints it and README.md shows it:
// sections as comment lines, each command with its comment, the comments
// of a section lined up after the short commands and above the long ones.
func RenderGuide(steps []Step) string {
	var b strings.Builder
	for i := 0; i < len(steps); {
		end := i + 1
		for end < len(steps) && steps[end].Section == "" {
			end++
		}
		if i > 0 {
			b.WriteString("\n")
		}
		renderSection(&b, steps[i:end])
		i = end
	}
	return b.String()
}

// alignLimit is the longest command whose comment is lined up with the
// others of its section: longer ones would push every comment off screen.
const alignLimit = 80

// renderSection writes one section of the guide.
func renderSection(b *strings.Builder, steps []Step) {
	if steps[0].Section != "" {
		for _, line := range strings.Split(steps[0].Section, "\n") {
			b.WriteString("# " + line + "\n")
		}
	}
	column := 0
	for _, s := range steps {
		if n := len(s.Command); n <= alignLimit && n > column {
			column = n
		}
	}
	for _, s := range steps {
		switch {
		case s.Comment == "":
			b.WriteString(s.Command)
		case len(s.Command) > alignLimit:
			b.WriteString("# " + s.Comment + ":\n" + s.Command)
		default:
			b.WriteString(s.Command + strings.Repeat(" ", column-len(s.Command)+2) + "# " + s.Comment)
		}
		b.WriteString("\n")
	}
}
