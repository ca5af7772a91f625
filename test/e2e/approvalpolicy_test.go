// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// approvalPolicies are the two policies of docs/security.md's example,
// limited to one namespace so that other tests' sessions stay under the
// flags: two approvers of shop-oncall for admin on production targets (the
// Shoot is labelled so by the test), and viewer sessions of oncall members
// on the Shoot, by name, approved by the policy up to 1h.
const approvalPolicies = `apiVersion: clustergate.dev/v1alpha1
kind: SessionApprovalPolicy
metadata: {name: e2e-shop-admin}
spec:
  sessions:
    namespaces: [NS]
    targetLabels: {matchLabels: {e2e.clustergate.dev/tier: production}}
    accessLevels: [admin]
  approvalRequired: true
  approvers: {count: 2, groups: [shop-oncall]}
  requireReason: true
---
apiVersion: clustergate.dev/v1alpha1
kind: SessionApprovalPolicy
metadata: {name: e2e-shop-viewer}
spec:
  sessions:
    namespaces: [NS]
    targets: [{shoot: {name: local}}]
    accessLevels: [viewer]
  approvalRequired: true
  approvers: {groups: [shop-oncall]}
  autoApprove: {groups: [oncall], maxTTL: 1h}
`

// TestApprovalPolicy walks approval policies through the real control
// plane as their users would, with kubectl and the plugin: alice's admin
// session on the Shoot waits for two approvers of shop-oncall; bob
// approves and it still waits; alice may not approve her own, dave (not in
// the group) is refused; carol approves and it opens. Frank, in oncall,
// gets his viewer session approved by the policy. Each step arrives once,
// signed, at the CloudEvents receiver. Then the receiver is down for a
// minute while alice asks again, bob approves, carol denies and alice
// deletes her first session, and clustergate's leader is killed (SIGKILL:
// it releases nothing) so that a replica takes over; once the receiver is
// back, every event arrives, none twice.
func TestApprovalPolicy(t *testing.T) {
	ctx := context.Background()
	// The replica that takes over from the killed leader.
	replica, err := cp.StartReplica(ctx, "clustergate-policy")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	ns := namespace(t, "approval-policy")
	shoots := []string{"-n", "garden-" + localcluster.Project, "label", "shoot", localcluster.Shoot}
	kubectl(t, append(shoots, "e2e.clustergate.dev/tier=production")...)
	t.Cleanup(func() { kubectl(t, append(shoots, "e2e.clustergate.dev/tier-")...) })
	apply(t, cp.AdminKubeconfig, strings.ReplaceAll(approvalPolicies, "NS", ns))
	t.Cleanup(func() {
		kubectl(t, "delete", "sessionapprovalpolicies", "e2e-shop-admin", "e2e-shop-viewer", "--wait")
	})
	grant(t, ns, "alice", "clustergate:session-user", "clustergate:target-admin")
	grant(t, ns, "frank", "clustergate:session-user", "clustergate:target-viewer")
	for _, approver := range []string{"alice", "bob", "carol", "dave"} {
		grant(t, ns, approver, "clustergate:session-approver")
	}
	alice, frank := userKubeconfig(t, "alice", "team-shop", "shop-oncall"), userKubeconfig(t, "frank", "oncall")
	bob, carol, dave := userKubeconfig(t, "bob", "shop-oncall"), userKubeconfig(t, "carol", "shop-oncall"), userKubeconfig(t, "dave", "sre")
	_, admin := clients(t)
	r := &eventReceiver{got: map[string]int{}, events: map[string]cloudevents.Event{}}
	startReceiver(t, r)

	session := func(name string) *v1alpha1.Session {
		t.Helper()
		s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// ask opens an admin session as alice, as the plugin does, and
	// returns its UID once bob approved it, which leaves it waiting.
	ask := func(name string) string {
		t.Helper()
		if out := mustSession(t, alice, ns, name, "open", "shoot/local", "--access", "admin", "--ttl", "30m",
			"--reason", "INC-36 checkout down", "--name", name); strings.TrimSpace(out) != name {
			t.Fatalf("kubectl session open printed %q, want the session's name", out)
		}
		s := session(name)
		if p := s.Status.ApprovalPolicy; p == nil || p.Name != "e2e-shop-admin" || len(s.Status.Approvals) != 1 || s.Status.Approvals[0].Required != 2 {
			t.Fatalf("session %s: status %+v, want a request under e2e-shop-admin needing 2", name, s.Status)
		}
		mustSession(t, bob, ns, "1 of 2 approved (bob)", "approve", name, "--reason", "INC-36 confirmed")
		return string(s.UID)
	}

	shop := ask("shop")
	if a := session("shop").Status.Approvals[0]; a.Decision != v1alpha1.ApprovalPending || len(a.Decisions) != 1 {
		t.Fatalf("after bob's approval: %+v, want still pending, 1 of 2", a)
	}
	for _, tt := range []struct {
		who, kubeconfig, want string
	}{
		{who: "alice", kubeconfig: alice, want: `user "alice" may not approve or deny their own session ` + ns + `/shop`},
		{who: "dave", kubeconfig: dave, want: `SessionApprovalPolicy "e2e-shop-admin" lets only the members of the groups ["shop-oncall"] decide`},
		{who: "bob again", kubeconfig: bob, want: `user "bob" already decided on the pending request`},
	} {
		stdout, stderr, ok := kubectlSession(t, tt.kubeconfig, ns, "approve", "shop")
		if ok || !strings.Contains(stderr, "Forbidden") || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s approving: ok %v, %q %q; want a Forbidden saying %q", tt.who, ok, stdout, stderr, tt.want)
		}
	}
	mustSession(t, carol, ns, "approved by carol", "approve", "shop", "--reason", "seen it")
	ready := waitSessionReady(t, admin, ns, "shop")
	if a := ready.Status.Approvals[0]; a.DecidedBy != "carol" || len(a.Decisions) != 2 || a.Decisions[0].Approver != "bob" || a.Decisions[1].Approver != "carol" {
		t.Errorf("shop's approval: %+v, want bob then carol", a)
	}

	// Frank is on call: his viewer session needs nobody.
	mustSession(t, frank, ns, "approved by policy:e2e-shop-viewer", "open", "shoot/local", "--access", "viewer", "--ttl", "1h", "--name", "look", "--wait")
	look := waitSessionReady(t, admin, ns, "look")
	if a := look.Status.Approvals; len(a) != 1 || a[0].DecidedBy != "policy:e2e-shop-viewer" || len(a[0].Decisions) != 0 {
		t.Errorf("frank's viewer session: approvals %+v, want approved by policy:e2e-shop-viewer alone", a)
	}

	autoSteps := []string{"requested.0", "auto_approved.0", "opened"}
	r.waitEvents(t, shop, "requested.0", "approved.0.0", "approved.0.1", "opened")
	r.waitEvents(t, string(look.UID), autoSteps...)
	checkOnce(t, r, shop, string(look.UID))
	r.mu.Lock()
	second, auto := r.events[shop+".approved.0.1"], r.events[string(look.UID)+".auto_approved.0"]
	r.mu.Unlock()
	var secondData, autoData sessionevents.Data
	if err := second.DataAs(&secondData); err != nil {
		t.Fatal(err)
	}
	if err := auto.DataAs(&autoData); err != nil {
		t.Fatal(err)
	}
	if d := secondData.Decision; d == nil || d.By != "carol" || d.Reason != "seen it" || secondData.Request == nil ||
		secondData.Request.Policy != "e2e-shop-admin" || secondData.Request.Required != 2 {
		t.Errorf("carol's approval event: %s", second)
	}
	if d := autoData.Decision; auto.Type() != string(sessionevents.AutoApproved) || d == nil || d.Policy != "e2e-shop-viewer" || d.By != "policy:e2e-shop-viewer" {
		t.Errorf("auto-approval event: %s", auto)
	}

	// The receiver goes down for a minute; meanwhile alice asks again,
	// carol denies, alice ends her first session, and the leader is killed.
	r.stop()
	down := time.Now()
	denied := ask("again")
	mustSession(t, carol, ns, "denied by carol", "deny", "again", "--reason", "one admin session is enough")
	mustSession(t, alice, ns, "session shop revoked", "revoke", "shop")
	kube, _ := clients(t)
	holder := func() string {
		t.Helper()
		l, err := kube.CoordinationV1().Leases(localcluster.ServerNamespace).Get(ctx, controllers.LeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *l.Spec.HolderIdentity
	}
	leader := holder()
	replicaAdmin, restart := takeLeaderDown(t, replica, cp.KillComponent)
	// The Lease of the killed leader runs out; the replica takes it and
	// ends both sessions.
	waitGone(t, replicaAdmin, ns, "shop", eventSinkLeaderChangeDeadline)
	waitGone(t, replicaAdmin, ns, "again", eventSinkLeaderChangeDeadline)
	if now := holder(); now == leader {
		t.Errorf("the Lease is still held by %s, the killed leader", now)
	}
	restart()
	time.Sleep(time.Until(down.Add(time.Minute)))
	startReceiver(t, r)
	r.waitEvents(t, shop, "requested.0", "approved.0.0", "approved.0.1", "opened", "revoked", "ended")
	r.waitEvents(t, denied, "requested.0", "approved.0.0", "denied.0.1", "ended")
	checkOnce(t, r, shop, denied, string(look.UID))
}

// checkOnce fails the test unless every event of the sessions with these
// UIDs came exactly once, each with a valid signature.
func checkOnce(t *testing.T, r *eventReceiver, uids ...string) {
	t.Helper()
	for _, uid := range uids {
		_, counts := r.ofSession(uid)
		for id, n := range counts {
			if n != 1 {
				t.Errorf("event %s came %d times", id, n)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSignatures > 0 {
		t.Errorf("%d requests had a bad signature", r.badSignatures)
	}
	for _, body := range r.bodies {
		if strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "client-certificate") {
			t.Errorf("an event carries a credential: %s", body)
		}
	}
}
