// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// targetSession is a one-hour session of the given access group, owned by
// owner (empty: the creator), to target: "shoot/NAME" or "cluster/SECRET".
func targetSession(name, owner, group, target string) string {
	kind, ref, _ := strings.Cut(target, "/")
	spec := "{shoot: {name: " + ref + "}}"
	if kind == "cluster" {
		spec = "{cluster: {kubeconfigSecretRef: {name: " + ref + "}}}"
	}
	ownerLine := ""
	if owner != "" {
		ownerLine = "  owner: " + owner + "\n"
	}
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata: {name: %s}
spec:
  ttl: 1h
%s  accessLevel: {group: %s}
  target: %s
`, name, ownerLine, group, spec)
}

// create creates manifest as the user of kubeconfig, only as far as
// admission when dryRun, and returns the error; with serverSide, it is a
// server-side apply.
func create(kubeconfig, ns, manifest string, dryRun, serverSide bool) error {
	args := []string{"-n", ns, "create", "-f", "-"}
	if serverSide {
		args = []string{"-n", ns, "apply", "--server-side", "-f", "-"}
	}
	if dryRun {
		args = append(args, "--dry-run=server")
	}
	_, err := cp.Kubectl(context.Background(), kubeconfig, []byte(manifest), args...)
	return err
}

// wantErr fails unless err is nil when want is empty, or says want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("got %v, want success", err)
	case want != "" && err == nil:
		t.Errorf("succeeded, want an error saying %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("got %v, want it to say %q", err, want)
	}
}

// canI asks kubectl auth can-i as the garden admin and returns yes or no.
func canI(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := cp.Kubectl(context.Background(), cp.AdminKubeconfig, nil, append([]string{"auth", "can-i"}, args...)...)
	return strings.TrimSpace(string(out))
}

// TestTargetAuthorization: a session's owner needs the access level's verb
// on the target, as RBAC on shoots and clusters of clustergate.dev, in the
// session's namespace; keeping a shoot's kubeconfig needs admin on it.
func TestTargetAuthorization(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "targets")
	// docs/security.md's recipe: the team may open viewer sessions to every
	// shoot and cluster, and admin sessions to the shoot local only.
	kubectl(t, "-n", ns, "create", "rolebinding", "team-sessions", "--clusterrole=clustergate:session-user", "--group=team")
	kubectl(t, "-n", ns, "create", "rolebinding", "team-viewer", "--clusterrole=clustergate:target-viewer", "--group=team")
	kubectl(t, "-n", ns, "create", "role", "admin-on-local", "--verb=admin", "--resource=shoots.clustergate.dev", "--resource-name=local")
	kubectl(t, "-n", ns, "create", "rolebinding", "team-admin-on-local", "--role=admin-on-local", "--group=team")
	grant(t, ns, "dave", "clustergate:session-user")
	grant(t, ns, "root", "clustergate:session-admin")
	carol := userKubeconfig(t, "carol", "team")
	dave := userKubeconfig(t, "dave")
	root := userKubeconfig(t, "root")
	cluster := "cluster/" + localcluster.ShootTargetSecret

	t.Run("kubectl auth can-i answers", func(t *testing.T) {
		for _, tt := range []struct{ verb, target, want string }{
			{"admin", "shoots.clustergate.dev/local", "yes"},
			{"admin", "shoots.clustergate.dev/other", "no"},
			{"viewer", "shoots.clustergate.dev/other", "yes"},
			{"viewer", "clusters.clustergate.dev/" + localcluster.ShootTargetSecret, "yes"},
			{"admin", "clusters.clustergate.dev/" + localcluster.ShootTargetSecret, "no"},
		} {
			if got := canI(t, tt.verb, tt.target, "-n", ns, "--as=carol", "--as-group=team"); got != tt.want {
				t.Errorf("can-i %s %s = %q, want %q", tt.verb, tt.target, got, tt.want)
			}
		}
	})

	tests := []struct {
		name       string
		kubeconfig string
		manifest   string
		serverSide bool
		want       string
	}{
		{name: "viewer on every shoot", kubeconfig: carol, manifest: targetSession("s", "", "viewer", "shoot/other")},
		{name: "admin on the one shoot granted", kubeconfig: carol, manifest: targetSession("s", "", "admin", "shoot/local")},
		{name: "admin on another shoot", kubeconfig: carol, manifest: targetSession("s", "", "admin", "shoot/other"),
			want: `user "carol" may not open "admin" sessions to shoots/local/other in namespace targets`},
		{name: "viewer on a cluster", kubeconfig: carol, manifest: targetSession("s", "", "viewer", cluster)},
		{name: "admin on a cluster", kubeconfig: carol, manifest: targetSession("s", "", "admin", cluster),
			want: fmt.Sprintf(`user "carol" may not open "admin" sessions to clusters/%s in namespace targets`, localcluster.ShootTargetSecret)},
		{name: "session-user grants no target", kubeconfig: dave, manifest: targetSession("s", "", "viewer", "shoot/local"),
			want: `user "dave" may not open "viewer" sessions to shoots/local/local in namespace targets`},
		{name: "nor does server-side apply", kubeconfig: dave, manifest: targetSession("s", "", "viewer", "shoot/local"), serverSide: true,
			want: `user "dave" may not open "viewer" sessions to shoots/local/local in namespace targets`},
		{name: "an assigned owner needs the grant", kubeconfig: root, manifest: targetSession("s", "{username: erin}", "viewer", "shoot/local"),
			want: `user "erin" may not open "viewer" sessions to shoots/local/local in namespace targets`},
		// TestAssignNeedsTheAssignersOwnAccess has the rest of it.
		{name: "an assigner gives only groups they are in", kubeconfig: root, manifest: targetSession("s", "{username: erin, groups: [team]}", "admin", "shoot/local"),
			want: `user "root" may not open a session owned by "erin" with the groups ["team"]: that needs the verb "assign-groups"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := create(tt.kubeconfig, ns, tt.manifest, true, tt.serverSide)
			wantErr(t, err, tt.want)
			if tt.want != "" && !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("the refusal is no 403: %v", err)
			}
		})
	}

	t.Run("a real session through the whole path", func(t *testing.T) {
		_, client := clients(t)
		if err := create(carol, ns, targetSession("carols", "", "admin", "shoot/local"), false, false); err != nil {
			t.Fatal(err)
		}
		waitSessionReady(t, client, ns, "carols")
	})

	t.Run("GardenerClusterKubeconfig needs admin on its shoot", func(t *testing.T) {
		kubectl(t, "-n", ns, "create", "role", "kubeconfig-writer", "--verb=create,get,list,watch,patch,update",
			"--resource=gardenerclusterkubeconfigs.clustergate.dev")
		kubectl(t, "-n", ns, "create", "rolebinding", "team-kubeconfig-writer", "--role=kubeconfig-writer", "--group=team")
		grant(t, ns, "frank", "clustergate:kubeconfig-admin")
		frank := userKubeconfig(t, "frank")
		gck := func(name, shoot string) string {
			return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata: {name: %s}
spec:
  shoot: {name: %s}
  kubeconfig: {secret: {name: kubeconfig-%s}}
`, name, shoot, name)
		}
		wantErr(t, create(carol, ns, gck("kept", "local"), false, false), "")
		wantErr(t, create(carol, ns, gck("other", "other"), true, false),
			`user "carol" may not keep a kubeconfig of shoots/local/other in namespace targets: that needs the verb "admin" on shoots.clustergate.dev named "other"`)
		// clustergate:kubeconfig-admin includes admin on every shoot.
		wantErr(t, create(frank, ns, gck("other", "other"), true, false), "")

		// Moving the kubeconfig is a spec change: it needs admin on the shoot.
		kubectl(t, "-n", ns, "create", "rolebinding", "gina-kubeconfig-writer", "--role=kubeconfig-writer", "--user=gina")
		gina := userKubeconfig(t, "gina")
		move := `{"spec":{"kubeconfig":{"secret":{"name":"kubeconfig-moved"}}}}`
		_, err := cp.Kubectl(context.Background(), gina, nil, "-n", ns, "patch", "gck", "kept", "--type=merge", "-p", move)
		wantErr(t, err, `user "gina" may not keep a kubeconfig of shoots/local/local in namespace targets`)
		// A change of metadata only asks nothing.
		kubectlAs(t, gina, "-n", ns, "label", "gck", "kept", "team=yes")
		kubectlAs(t, carol, "-n", ns, "patch", "gck", "kept", "--type=merge", "-p", move)
	})
}

// TestCredentialIsolation: the server uses as a cluster target only a
// Secret marked as one, and never one holding credentials it minted.
func TestCredentialIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, client := clients(t)
	ns := namespace(t, "isolation")

	// notATarget waits until the session says its Secret is no target, and
	// checks that nothing was asked of the shoot for it meanwhile.
	notATarget := func(t *testing.T, name string) {
		t.Helper()
		var s *v1alpha1.Session
		eventually(t, time.Minute, "Ready=False TargetNotMarked", func() error {
			var err error
			if s, err = client.ClustergateV1alpha1().Sessions(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
			c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.SessionReasonTargetNotMarked {
				return fmt.Errorf("conditions %+v", s.Status.Conditions)
			}
			if !strings.Contains(c.Message, v1alpha1.LabelClusterTarget+"=true") {
				return fmt.Errorf("the message does not name the mark: %s", c.Message)
			}
			return nil
		})
		if _, err := cp.Kubectl(ctx, cp.ShootKubeconfig, nil, "get", "csr", credentials.CSRName(s.UID)); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("a CSR was made on the shoot for %s: %v", name, err)
		}
	}

	t.Run("an unmarked Secret is no target", func(t *testing.T) {
		shootKubeconfig, err := os.ReadFile(cp.ShootKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		// A working kubeconfig of the shoot, in the server's namespace.
		if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, shootKubeconfig, "-n", "clustergate-system", "create", "secret", "generic",
			"unmarked", "--from-file=kubeconfig=/dev/stdin"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kubectl(t, "-n", "clustergate-system", "delete", "secret", "unmarked", "--wait") })
		apply(t, cp.AdminKubeconfig, targetSession("unmarked", "", "viewer", "cluster/unmarked"), "-n", ns)
		notATarget(t, "unmarked")

		// Marked, it is a target: the waiting session goes on at once, not
		// when some timer comes round (sessions waiting for a target are
		// not retried on a timer).
		kubectl(t, "-n", "clustergate-system", "label", "secret", "unmarked", v1alpha1.LabelClusterTarget+"=true")
		eventually(t, 10*time.Second, "the session goes on once its Secret is marked", func() error {
			s, err := client.ClustergateV1alpha1().Sessions(ns).Get(ctx, "unmarked", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionCredentialsReady); c == nil || c.Reason == v1alpha1.SessionReasonTargetNotMarked {
				return fmt.Errorf("conditions %+v", s.Status.Conditions)
			}
			return nil
		})
		waitSessionReady(t, client, ns, "unmarked")
	})

	t.Run("another session's credentials are no target", func(t *testing.T) {
		apply(t, cp.AdminKubeconfig, targetSession("victim", "", "viewer", "cluster/"+localcluster.ShootTargetSecret), "-n", ns)
		victim := waitSessionReady(t, client, ns, "victim")
		apply(t, cp.AdminKubeconfig, targetSession("thief", "", "viewer", "cluster/"+credentials.SecretName(victim.UID)), "-n", ns)
		notATarget(t, "thief")

		msg := kubectlErr(t, cp.AdminKubeconfig, "", "-n", "clustergate-system", "label", "secret", credentials.SecretName(victim.UID),
			v1alpha1.LabelClusterTarget+"=true")
		if !strings.Contains(msg, "may not be marked as a cluster target") {
			t.Errorf("marking a session's credentials: %s", msg)
		}
	})

	t.Run("a kept kubeconfig never gets the mark", func(t *testing.T) {
		kube, _ := clients(t)
		obj := newKubeconfigObject("marked", localcluster.Shoot, "kubeconfig-marked")
		obj.Labels[v1alpha1.LabelClusterTarget] = "true"
		if _, err := client.ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, client, ns, "marked", v1alpha1.KubeconfigReasonCreated, time.Minute)
		s := getSecret(t, kube, ns, "kubeconfig-marked")
		if _, marked := s.Labels[v1alpha1.LabelClusterTarget]; marked || s.Labels["kyma-project.io/runtime-id"] != "marked" {
			t.Errorf("the kept kubeconfig's labels: %v", s.Labels)
		}
	})
}

// TestOwnerOnlyChanges: only the owner, or a holder of revoke, may change or
// delete a session, by name or all at once.
func TestOwnerOnlyChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "owners")
	for _, u := range []string{"alice", "bob"} {
		grant(t, ns, u, "clustergate:session-user", "clustergate:target-viewer")
	}
	alice, bob := userKubeconfig(t, "alice"), userKubeconfig(t, "bob")
	_, admin := clients(t)
	exists := func(name string) bool {
		_, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	const revoke = `needs the verb "revoke" on sessions in namespace "owners"`

	// session-user grants patch: server-side apply creates one's own
	// session, and applying it again changes nothing but works.
	for _, name := range []string{"alices", "alices-too"} {
		wantErr(t, create(alice, ns, targetSession(name, "", "viewer", "shoot/local"), false, true), "")
	}
	wantErr(t, create(alice, ns, targetSession("alices", "", "viewer", "shoot/local"), false, true), "")
	wantErr(t, create(bob, ns, targetSession("bobs", "", "viewer", "shoot/local"), false, true), "")

	tests := []struct {
		name string
		args []string
		// stdin for kubectl apply.
		stdin string
	}{
		{name: "delete by name", args: []string{"delete", "session", "alices"}},
		{name: "label", args: []string{"label", "session", "alices", "mine=yes"}},
		{name: "patch", args: []string{"patch", "session", "alices", "--type=merge", "-p", `{"metadata":{"annotations":{"mine":"yes"}}}`}},
		{name: "server-side apply", args: []string{"apply", "--server-side", "--force-conflicts", "-f", "-"},
			stdin: targetSession("alices", "", "viewer", "shoot/local")},
	}
	for _, tt := range tests {
		t.Run("someone else's: "+tt.name, func(t *testing.T) {
			msg := kubectlErr(t, bob, tt.stdin, append([]string{"-n", ns}, tt.args...)...)
			if !strings.Contains(msg, `user "bob" may not change or delete session owners/alices owned by "alice"`) || !strings.Contains(msg, revoke) {
				t.Errorf("got %s", msg)
			}
			if !exists("alices") {
				t.Fatal("alice's session is gone")
			}
		})
	}

	// Both stop at the first session that is not bob's; which of bob's
	// own go before depends on the order.
	t.Run("delete --all", func(t *testing.T) {
		msg := kubectlErr(t, bob, "", "-n", ns, "delete", "sessions", "--all", "--wait")
		if !strings.Contains(msg, revoke) {
			t.Errorf("got %s", msg)
		}
		if !exists("alices") || !exists("alices-too") {
			t.Error("bob's delete --all deleted alice's sessions")
		}
	})

	t.Run("a delete collection", func(t *testing.T) {
		// kubectl deletes one by one; the API's delete collection asks per session too.
		kubectl(t, "-n", ns, "create", "role", "collector", "--verb=deletecollection", "--resource=sessions.clustergate.dev")
		kubectl(t, "-n", ns, "create", "rolebinding", "bob-collector", "--role=collector", "--user=bob")
		bobClient, err := versioned.NewForConfig(restConfig(t, bob))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "bob's delete collection refused for alice's sessions", func() error {
			err := bobClient.ClustergateV1alpha1().Sessions(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), revoke) {
				// RBAC may not have seen the new binding yet.
				return fmt.Errorf("got %w", err)
			}
			return nil
		})
		if !exists("alices") || !exists("alices-too") {
			t.Error("bob's delete collection deleted alice's sessions")
		}
	})

	t.Run("the owner deletes", func(t *testing.T) {
		kubectlAs(t, alice, "-n", ns, "delete", "session", "alices-too", "--wait")
		if exists("alices-too") {
			t.Error("still there")
		}
	})

	t.Run("a holder of revoke ends every session of a user", func(t *testing.T) {
		other := namespace(t, "owners-elsewhere")
		for _, n := range []string{ns, other} {
			grant(t, n, "victor", "clustergate:target-viewer")
			apply(t, cp.AdminKubeconfig, targetSession("victors", "{username: victor}", "viewer", "shoot/local"), "-n", n)
		}
		kubectl(t, "create", "clusterrolebinding", "owners-revoker", "--clusterrole=clustergate:session-admin", "--user=rita")
		t.Cleanup(func() { kubectl(t, "delete", "clusterrolebinding", "owners-revoker", "--wait") })
		rita := userKubeconfig(t, "rita")
		// As docs/security.md shows it.
		out := kubectlAs(t, rita, "delete", "sessions", "-A", "--field-selector", "spec.owner.username=victor")
		if n := strings.Count(out, `"victors" deleted`); n != 2 {
			t.Errorf("kubectl reported %d deletes, want 2:\n%s", n, out)
		}
		for _, n := range []string{ns, other} {
			if _, err := admin.ClustergateV1alpha1().Sessions(n).Get(ctx, "victors", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s/victors: %v", n, err)
			}
		}
		if !exists("alices") {
			t.Error("alice's session went with victor's")
		}
	})
}
