// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// as is a clientset acting as user in groups; system:masters, as every
// user of the standalone server must be, is added.
func as(t *testing.T, user string, groups ...string) *versioned.Clientset {
	t.Helper()
	cfg := rest.CopyConfig(config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:masters")}
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestApprovalPolicy walks the scenario through the real server,
// its SessionOwner admission and its storage: alice's admin session waits
// for two approvers of shop-oncall; bob approves and it still waits; alice,
// dave (not in the group) and bob again are refused naming the policy;
// carol approves and it opens; erin, in oncall, gets her viewer session
// approved by the policy.
func TestApprovalPolicy(t *testing.T) {
	ctx := context.Background()
	const ns = "approval-policy"
	policies := clientset(t).ClustergateV1alpha1().SessionApprovalPolicies()
	shoot := []v1alpha1.SessionLockTarget{{Shoot: &v1alpha1.ShootReference{Name: "local"}}}
	for _, p := range []*v1alpha1.SessionApprovalPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-admin"}, Spec: v1alpha1.SessionApprovalPolicySpec{
			Sessions:         v1alpha1.SessionSelector{Namespaces: []string{ns}, Targets: shoot, AccessLevels: []string{"admin"}},
			ApprovalRequired: true, Approvers: &v1alpha1.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-viewer"}, Spec: v1alpha1.SessionApprovalPolicySpec{
			Sessions:         v1alpha1.SessionSelector{Namespaces: []string{ns}, Targets: shoot, AccessLevels: []string{"viewer"}},
			ApprovalRequired: true, Approvers: &v1alpha1.SessionApprovers{Groups: []string{"shop-oncall"}},
			AutoApprove: &v1alpha1.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}}}},
	} {
		created, err := policies.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.Approvers.Count != 1 && p.Name == "shop-viewer" {
			t.Errorf("shop-viewer's approvers.count = %d, want the default 1", created.Spec.Approvers.Count)
		}
		t.Cleanup(func() { _ = policies.Delete(ctx, p.Name, metav1.DeleteOptions{}) })
	}

	admin := newSession("alice-admin")
	admin.Spec.Owner, admin.Spec.AccessLevel.Group = v1alpha1.SessionOwner{}, "admin"
	s, err := as(t, "alice", "team-shop").ClustergateV1alpha1().Sessions(ns).Create(ctx, admin, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' sessions are alice's too, up to --session-max-per-owner.
	t.Cleanup(func() {
		_ = clientset(t).ClustergateV1alpha1().Sessions(ns).Delete(ctx, "alice-admin", metav1.DeleteOptions{})
	})
	if p := s.Status.ApprovalPolicy; p == nil || p.Name != "shop-admin" || s.Status.Approvals[0].Required != 2 {
		t.Fatalf("status = %+v, want the opening pending under shop-admin, needing 2", s.Status)
	}
	decide := func(c *versioned.Clientset, d v1alpha1.ApprovalDecision) (*v1alpha1.Session, error) {
		got, err := c.ClustergateV1alpha1().Sessions(ns).Get(ctx, "alice-admin", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		got.Status.Approvals[0].Decision, got.Status.Approvals[0].Reason = d, "INC-36"
		return c.ClustergateV1alpha1().Sessions(ns).UpdateApproval(ctx, got.Name, got, metav1.UpdateOptions{})
	}
	s, err = decide(as(t, "bob", "shop-oncall"), v1alpha1.ApprovalApproved)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Status.Approvals[0]; a.Decision != v1alpha1.ApprovalPending || len(a.Decisions) != 1 || a.Decisions[0].Approver != "bob" {
		t.Fatalf("after bob: %+v, want 1 of 2, still pending", a)
	}
	for _, tt := range []struct {
		who  *versioned.Clientset
		want string
	}{
		{who: as(t, "alice", "team-shop", "shop-oncall"), want: `user "alice" may not approve or deny their own session approval-policy/alice-admin`},
		{who: as(t, "dave", "sre"), want: `user "dave" may not approve or deny session approval-policy/alice-admin: SessionApprovalPolicy "shop-admin" lets only the members of the groups ["shop-oncall"] decide`},
		{who: as(t, "bob", "shop-oncall"), want: `user "bob" already decided on the pending request of session approval-policy/alice-admin: it needs 2 distinct approvers`},
	} {
		if _, err := decide(tt.who, v1alpha1.ApprovalApproved); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("refused: %v, want 403 saying %q", err, tt.want)
		}
	}
	s, err = decide(as(t, "carol", "shop-oncall"), v1alpha1.ApprovalApproved)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Status.Approvals[0]; a.Decision != v1alpha1.ApprovalApproved || a.DecidedBy != "carol" || len(a.Decisions) != 2 || s.Status.ExpiresAt == nil {
		t.Errorf("after carol: %+v, expiresAt %v; want approved by carol after bob, with an expiry", a, s.Status.ExpiresAt)
	}

	viewer := newSession("erin-viewer")
	viewer.Spec.Owner = v1alpha1.SessionOwner{}
	s, err = as(t, "erin", "oncall").ClustergateV1alpha1().Sessions(ns).Create(ctx, viewer, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Status.Approvals; len(a) != 1 || a[0].Decision != v1alpha1.ApprovalApproved || a[0].DecidedBy != "policy:shop-viewer" || s.Status.ExpiresAt == nil {
		t.Errorf("erin's viewer session: %+v, want approved by policy:shop-viewer with an expiry", s.Status)
	}
}
