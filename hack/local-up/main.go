// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-up runs the local control plane of `make run` in the
// foreground until Ctrl-C or SIGTERM, then stops everything it started.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
)

func main() {
	root, _ := os.Getwd()
	dir := flag.String("dir", filepath.Join(root, "_output", "local"), "directory for certificates, kubeconfigs, data and logs")
	bin := flag.String("bin", filepath.Join(root, "_output", "bin"), "directory of the built binaries")
	withPrometheus := flag.Bool("prometheus", false, "also run Prometheus with the rules of artifacts/monitoring, scraping clustergate")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, root, *dir, *bin, *withPrometheus); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, dir, bin string, withPrometheus bool) error {
	start := time.Now()
	logf := func(format string, args ...any) { fmt.Printf("local-up: "+format+"\n", args...) }
	cp, err := localcluster.Start(ctx, localcluster.Options{Dir: dir, BinDir: bin, RepoRoot: root, Logf: logf,
		// Admin sessions wait for a second person, so the lifecycle can be tried.
		ClustergateArgs: []string{"--session-approval-groups=admin"}})
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping")
		cp.Stop()
	}()
	logf("control plane ready in %s", time.Since(start).Round(100*time.Millisecond))
	prometheus := ""
	if withPrometheus {
		p, err := cp.StartPrometheus(ctx, localcluster.PrometheusOptions{ScrapeInterval: 10 * time.Second})
		if err != nil {
			return err
		}
		// The web UI's assets are not part of the Go module: the API only.
		prometheus = fmt.Sprintf("Prometheus (rules of artifacts/monitoring): curl %s/api/v1/alerts\n"+
			"                                          curl '%s/api/v1/query?query=job:clustergate_sessions:max'\n", p.URL, p.URL)
	}

	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "create", "namespace", "demo"); err != nil {
		return err
	}
	// The README's user alice may open sessions in demo: her own sessions,
	// viewer on every target there, and admin, which bob, an approver, must
	// approve. The example session is hers; the admin keeps the example
	// kubeconfig.
	for _, b := range []struct{ name, role, user string }{
		{"alice-sessions", "clustergate:session-user", "alice"}, {"alice-targets", "clustergate:target-viewer", "alice"},
		{"alice-admin-targets", "clustergate:target-admin", "alice"}, {"bob-approves", "clustergate:session-approver", "bob"},
	} {
		if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "demo", "create", "rolebinding", b.name, "--clusterrole="+b.role, "--user="+b.user); err != nil {
			return err
		}
	}
	alice, err := cp.UserKubeconfig("alice", "sre")
	if err != nil {
		return err
	}
	for example, kubeconfig := range map[string]string{"session.yaml": alice, "gardenerclusterkubeconfig.yaml": cp.AdminKubeconfig} {
		if out, err := cp.Kubectl(ctx, kubeconfig, nil, "-n", "demo", "apply", "--server-side", "-f", filepath.Join(root, "artifacts", "examples", example)); err != nil {
			logf("example %s not created: %v", example, err)
		} else {
			fmt.Print(string(out))
		}
	}

	// The example session's kubeconfig, completed with alice's
	// certificate, for a first look through the proxy.
	sessionKubeconfig := filepath.Join(dir, "look-around.kubeconfig")
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "demo", "wait", "--for=condition=Ready", "--timeout=60s", "session/look-around"); err != nil {
		logf("the example session is not Ready: %v", err)
	} else if err := cp.SessionKubeconfig(ctx, alice, "demo", "look-around", sessionKubeconfig); err != nil {
		logf("no kubeconfig for the example session: %v", err)
	}

	// The data plane: a service account with no RBAC on the garden, whose
	// tokens the data plane maps to a name of its own, with viewer on the
	// targets, and a session the admin assigned to that name. Its
	// kubeconfig, from sessions/kubeconfig, points at the data plane and
	// fetches the token with the exec plugin: no credential in the file.
	sre := localcluster.DataPlaneUserPrefix + "system:serviceaccount:demo:" + localcluster.DemoSRE
	for _, args := range [][]string{
		{"create", "serviceaccount", localcluster.DemoSRE},
		{"create", "rolebinding", "sre-targets", "--clusterrole=clustergate:target-viewer", "--user=" + sre},
	} {
		if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, append([]string{"-n", "demo"}, args...)...); err != nil {
			return err
		}
	}
	forSRE := fmt.Sprintf(`{"apiVersion":"clustergate.dev/v1alpha1","kind":"Session","metadata":{"name":"for-sre","namespace":"demo"},
"spec":{"ttl":"1h","owner":{"username":%q},"accessLevel":{"group":"viewer"},"target":{"shoot":{"name":"local"}}}}`, sre)
	forSREKubeconfig := filepath.Join(dir, "for-sre.kubeconfig")
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, []byte(forSRE), "apply", "-f", "-"); err != nil {
		logf("the data-plane example session is not created: %v", err)
	} else if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "demo", "wait", "--for=condition=Ready", "--timeout=60s", "session/for-sre"); err != nil {
		logf("the data-plane example session is not Ready: %v", err)
	} else if out, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", "demo", "get", "--raw",
		"/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/for-sre/kubeconfig"); err != nil {
		logf("no kubeconfig for the data-plane example session: %v", err)
	} else {
		var answer struct{ Kubeconfig []byte }
		if err := json.Unmarshal(out, &answer); err != nil {
			return err
		}
		if err := os.WriteFile(forSREKubeconfig, answer.Kubeconfig, 0o600); err != nil {
			return err
		}
	}

	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil {
			return r
		}
		return p
	}
	fmt.Printf(`
clustergate is registered with the garden kube-apiserver at %s.

  export KUBECONFIG=%s
  kubectl api-resources --api-group=clustergate.dev
  kubectl get clustergate -A            # sessions and gardenerclusterkubeconfigs
  kubectl -n demo get sess,gck -o wide
  kubectl explain session.spec

The shoot "local" (Gardener project "local"): kubectl --kubeconfig=%s get ns
Through alice's session demo/look-around: kubectl --kubeconfig=%s get ns
A kubeconfig for another user:           hack/local-user.sh alice [GROUP...]

The data plane at %s, whose JWTs the garden's service-account issuer signs; the
session demo/for-sre belongs to %s, the data plane's name of the
service account demo/sre, which has no RBAC on the garden. Its kubeconfig carries no
credential, only an exec plugin that fetches the service account's token:
  kubectl --kubeconfig %s get ns
or by hand:
  TOKEN=$(kubectl -n demo create token sre --audience %s)
  curl --cacert %s -H "Authorization: Bearer $TOKEN" %s/sessions/demo/for-sre/api/v1/namespaces

Admin sessions wait for approval (--session-approval-groups=admin); with the plugin:
  export PATH=$PWD/_output/bin:$PATH
  kubectl session open shoot/local --kubeconfig "$(hack/local-user.sh alice sre)" -n demo --access admin --ttl 15m --reason INC-1 --name fix --wait
  kubectl session approve fix --kubeconfig "$(hack/local-user.sh bob)" -n demo --reason "INC-1 is real"
  kubectl session extend fix 10m --kubeconfig "$(hack/local-user.sh alice sre)" -n demo

%sLogs: %s

Press Ctrl-C to stop.
`, cp.GardenURL, rel(cp.AdminKubeconfig), rel(cp.ShootKubeconfig), rel(sessionKubeconfig),
		cp.DataPlaneURL, sre, rel(forSREKubeconfig), localcluster.DataPlaneAudience, rel(cp.DataPlaneCAFile), cp.DataPlaneURL,
		prometheus, rel(filepath.Join(dir, "logs")))

	<-ctx.Done()
	return nil
}
