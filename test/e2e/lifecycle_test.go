// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// Sessions of the access group breakglass wait for approval on the e2e
// control plane, at most approvalTimeout; every other group, as before,
// does not.
const (
	approvalGroup   = "breakglass"
	orphanSweep     = 5 * time.Second
	approvalTimeout = 20 * time.Second
)

// auditLog is clustergate's audit log, at level Metadata for sessions.
var auditLog string

// lifecycleSetup puts bin, with kubectl-session, on the PATH, so that
// kubectl finds the plugin as a user's would, and returns the flags of
// clustergate for the lifecycle tests, with an audit policy and log in dir,
// and its --session-access-config: the shipped one of the checkout at root
// with one more level.
func lifecycleSetup(root, bin, dir string) (args []string, accessConfig string, err error) {
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources: [{group: clustergate.dev, resources: [sessions/proxy, sessions/approval, sessions/extension]}]
`), 0o600); err != nil {
		return nil, "", err
	}
	auditLog = filepath.Join(dir, "audit.log")
	if err := os.Remove(auditLog); err != nil && !os.IsNotExist(err) {
		return nil, "", err
	}
	// The shipped levels and deny rules, and a level of the tests' own
	// that needs approval.
	access, err := sessionaccess.Load(filepath.Join(root, "artifacts", "examples", "session-access.yaml"))
	if err != nil {
		return nil, "", err
	}
	access.Levels = append(access.Levels, sessionaccess.Level{Name: approvalGroup, Group: approvalGroup})
	accessYAML, err := yaml.Marshal(access)
	if err != nil {
		return nil, "", err
	}
	accessConfig = filepath.Join(dir, "session-access.yaml")
	if err := os.WriteFile(accessConfig, accessYAML, 0o600); err != nil {
		return nil, "", err
	}
	sinksConfig, err := eventSinkSetup(dir)
	if err != nil {
		return nil, "", err
	}
	return []string{
		"--session-event-sinks-config=" + sinksConfig,
		"--session-approval-groups=" + approvalGroup,
		// Orphaned RoleBindings of scoped sessions go within seconds.
		"--session-orphan-sweep-interval=" + orphanSweep.String(),
		"--session-approval-timeout=" + approvalTimeout.String(),
		"--session-lock-retention=" + lockRetention.String(),
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-format=json",
	}, accessConfig, nil
}

// grantBreakglass lets user open breakglass sessions to every cluster target
// in ns, and makes approvers approvers there.
func grantBreakglass(t *testing.T, ns, user string, approvers ...string) {
	t.Helper()
	kubectl(t, "-n", ns, "create", "role", "breakglass", "--verb="+approvalGroup, "--resource=clusters.clustergate.dev")
	kubectl(t, "-n", ns, "create", "rolebinding", user+"-breakglass", "--role=breakglass", "--user="+user)
	grant(t, ns, user, "clustergate:session-user")
	for _, a := range approvers {
		grant(t, ns, a, "clustergate:session-approver")
	}
}

// clientOf is the clientset of a garden kubeconfig.
func clientOf(t *testing.T, kubeconfig string) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(restConfig(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decide decides the session's pending approval as the client's user,
// as the plugin does: on the session read again after a conflict, since a
// session in use changes (status.lastUsedAt).
func decide(client versioned.Interface, ns, name string, d v1alpha1.ApprovalDecision, reason string) (decided *v1alpha1.Session, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last := &s.Status.Approvals[len(s.Status.Approvals)-1]
		last.Decision, last.Reason = d, reason
		decided, err = client.ClustergateV1alpha1().Sessions(ns).UpdateApproval(context.Background(), name, s, metav1.UpdateOptions{})
		return err
	})
	return decided, err
}

// extendTo asks, as the client's user, to move the session's expiry to
// at, as the plugin does: on the session read again after a conflict.
func extendTo(client versioned.Interface, ns, name string, at time.Time) (extended *v1alpha1.Session, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status.ExpiresAt = &metav1.Time{Time: at}
		extended, err = client.ClustergateV1alpha1().Sessions(ns).UpdateExtension(context.Background(), name, s, metav1.UpdateOptions{})
		return err
	})
	return extended, err
}

// waitGone waits until the session is deleted and gone.
func waitGone(t *testing.T, client versioned.Interface, ns, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "session "+ns+"/"+name+" gone", func() error {
		_, err := client.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
}

// TestSessionApproval: a breakglass session starts without credentials or
// expiry and says it waits; its owner may not approve it, another approver
// may, and its expiry is then the approval's time + ttl. A denied session and
// one that waited too long are removed. The reason shows in the wide table,
// the events and the audit log.
func TestSessionApproval(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "approval")
	grantBreakglass(t, ns, "alice", "alice", "bob")
	alice, bob := userKubeconfig(t, "alice", "sre"), userKubeconfig(t, "bob")
	_, admin := clients(t)
	// session-approver reads and decides, nothing more; session-user extends.
	for _, c := range []struct{ user, verb, subresource, want string }{
		{"bob", "approve", "", "yes"}, {"bob", "update", "approval", "yes"}, {"bob", "list", "", "yes"},
		{"bob", "delete", "", "no"}, {"bob", "extend", "", "no"}, {"bob", "create", "", "no"},
		{"alice", "extend", "", "yes"}, {"alice", "update", "extension", "yes"}, {"alice", "update", "approval", "yes"},
		{"carol", "update", "approval", "no"},
	} {
		args := []string{c.verb, "sessions.clustergate.dev", "-n", ns, "--as=" + c.user}
		if c.subresource != "" {
			args = append(args, "--subresource="+c.subresource)
		}
		if got := canI(t, args...); got != c.want {
			t.Errorf("can %s %s sessions/%s: %s, want %s", c.user, c.verb, c.subresource, got, c.want)
		}
	}
	withReason := func(name string) string {
		return clusterSessionManifest(name, "30s", approvalGroup) + "  reason: INC-7 etcd is full\n"
	}
	// First: its timeout runs while the rest of the test does.
	apply(t, alice, withReason("time-out"), "-n", ns)
	timeOutCreated := time.Now()
	apply(t, alice, withReason("approve-me"), "-n", ns)
	apply(t, alice, withReason("deny-me"), "-n", ns)

	eventually(t, 30*time.Second, "approve-me says it waits", func() error {
		s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(context.Background(), "approve-me", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
		if s.Status.ExpiresAt != nil || ready == nil || ready.Reason != v1alpha1.SessionReasonWaitingForApproval {
			return fmt.Errorf("expiresAt %v, Ready %+v", s.Status.ExpiresAt, ready)
		}
		return nil
	})

	_, err := decide(clientOf(t, alice), ns, "approve-me", v1alpha1.ApprovalApproved, "me")
	wantErr(t, err, "may not approve or deny their own session")
	approved, err := decide(clientOf(t, bob), ns, "approve-me", v1alpha1.ApprovalApproved, "INC-7 confirmed")
	if err != nil {
		t.Fatal(err)
	}
	decision := approved.Status.Approvals[0]
	if decision.DecidedBy != "bob" || decision.DecidedAt == nil || approved.Status.ExpiresAt == nil ||
		!approved.Status.ExpiresAt.Equal(&metav1.Time{Time: decision.DecidedAt.Add(30 * time.Second)}) {
		t.Fatalf("approved: decision %+v, expiresAt %v; want by bob, expiring 30s after", decision, approved.Status.ExpiresAt)
	}
	waitSessionReady(t, admin, ns, "approve-me")

	wide := kubectl(t, "-n", ns, "get", "sessions", "approve-me", "-o", "wide")
	if !strings.Contains(wide, "Approved by bob") || !strings.Contains(wide, "INC-7 etcd is full") {
		t.Errorf("the wide table lacks the approval or the reason:\n%s", wide)
	}
	if describe := kubectl(t, "-n", ns, "describe", "sessions", "approve-me"); !strings.Contains(describe, "INC-7 etcd is full") || !strings.Contains(describe, "INC-7 confirmed") {
		t.Errorf("kubectl describe lacks the reason or the approval's:\n%s", describe)
	}
	eventually(t, 10*time.Second, "an event says who approved and why", func() error {
		events := kubectl(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.name=approve-me", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
		if !strings.Contains(events, "approved by bob") || !strings.Contains(events, "INC-7 confirmed") || !strings.Contains(events, "reason: INC-7 etcd is full") {
			return fmt.Errorf("events:\n%s", events)
		}
		return nil
	})
	audit, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"clustergate.dev/decision":"Open Approved"`) || !strings.Contains(string(audit), `"clustergate.dev/session-reason":"INC-7 etcd is full"`) {
		t.Errorf("the audit log lacks the decision or the reason")
	}

	if _, err := decide(clientOf(t, bob), ns, "deny-me", v1alpha1.ApprovalDenied, "no incident"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, admin, ns, "deny-me", 15*time.Second)
	waitGone(t, admin, ns, "time-out", time.Until(timeOutCreated.Add(approvalTimeout+10*time.Second)))
	t.Logf("the unapproved session was removed %s after its creation (timeout %s)", time.Since(timeOutCreated).Round(100*time.Millisecond), approvalTimeout)
}
