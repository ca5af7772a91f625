// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
	policystorage "github.com/clustergate/clustergate/pkg/registry/sessionapprovalpolicy/storage"
)

// TestApprovalPolicyOnStorage stores the policy and sessions in
// etcd: alice's admin session waits for two approvers and keeps the policy
// as it was at creation when the policy changes, opening only at the
// second approval; an oncall member's viewer session is approved by the
// policy at creation; a TTL beyond the policy's maxTTL is refused naming
// it; with the policy gone, the flags apply again.
func TestApprovalPolicyOnStorage(t *testing.T) {
	scheme := registrytest.Scheme()
	policies, err := policystorage.NewREST(scheme, registrytest.NewRESTOptions(t, scheme, "sessionapprovalpolicies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(policies.Destroy)
	limits := validation.DefaultSessionLimits()
	limits.ApprovalGroups = sets.New("admin")
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{
		Limits: limits, Policies: policies,
		Proxy: ProxyConfig{Tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Session.Destroy)
	cluster := registrytest.Context("")
	shop := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: clustergate.SessionApprovalPolicySpec{
		Sessions:         clustergate.SessionSelector{Targets: []clustergate.SessionLockTarget{{Shoot: &clustergate.ShootReference{Name: "prod"}}}},
		ApprovalRequired: true, MaxTTL: &metav1.Duration{Duration: 4 * time.Hour},
		Approvers:   &clustergate.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}},
		AutoApprove: &clustergate.SessionAutoApproval{Groups: []string{"oncall"}, MaxTTL: metav1.Duration{Duration: time.Hour}},
	}}
	if _, err := policies.Create(cluster, shop, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	admin := newSession("alice-admin", "alice", "prod", nil)
	admin.Spec.AccessLevel.Group = "admin"
	waiting := create(t, s, admin)
	if p := waiting.Status.ApprovalPolicy; p == nil || p.Name != "shop" || p.Generation != 1 || p.Approvers.Count != 2 || p.AutoApprove != nil {
		t.Fatalf("status.approvalPolicy = %+v, want shop generation 1, two approvers, no auto-approval for alice", p)
	}
	if a := waiting.Status.Approvals; len(a) != 1 || a[0].Decision != clustergate.ApprovalPending || a[0].Policy != "shop" || a[0].Required != 2 {
		t.Fatalf("approvals = %+v, want the opening pending under shop, needing 2", a)
	}

	// A policy edited later does not change the pending decision.
	edited := shop.DeepCopy()
	got, err := policies.Get(cluster, "shop", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited.ResourceVersion = got.(*clustergate.SessionApprovalPolicy).ResourceVersion
	edited.Spec.Approvers.Count = 1
	if _, _, err := policies.Update(cluster, "shop", rest.DefaultUpdatedObjectInfo(edited), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
		false, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve := func(by string, in *clustergate.Session) *clustergate.Session {
		t.Helper()
		in = in.DeepCopy()
		in.Status.Approvals[0].Decision = clustergate.ApprovalApproved
		out, err := update(genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: by}), s.Approval, in)
		if err != nil {
			t.Fatalf("%s approves: %v", by, err)
		}
		return out
	}
	afterBob := approve("bob", waiting)
	if a := afterBob.Status.Approvals[0]; a.Decision != clustergate.ApprovalPending || len(a.Decisions) != 1 || afterBob.Status.ExpiresAt != nil {
		t.Fatalf("after bob: %+v, expiresAt %v; want 1 of 2, still pending", a, afterBob.Status.ExpiresAt)
	}
	afterCarol := approve("carol", afterBob)
	if a := afterCarol.Status.Approvals[0]; a.Decision != clustergate.ApprovalApproved || a.DecidedBy != "carol" || afterCarol.Status.ExpiresAt == nil {
		t.Fatalf("after carol: %+v, expiresAt %v; want approved by carol with an expiry", a, afterCarol.Status.ExpiresAt)
	}

	viewer := newSession("erin-viewer", "erin", "prod", nil)
	viewer.Spec.Owner.Groups = []string{"oncall"}
	auto := create(t, s, viewer)
	if a := auto.Status.Approvals; len(a) != 1 || a[0].Decision != clustergate.ApprovalApproved || a[0].DecidedBy != "policy:shop" || auto.Status.ExpiresAt == nil {
		t.Fatalf("oncall viewer: approvals %+v, expiresAt %v; want approved by policy:shop with an expiry", a, auto.Status.ExpiresAt)
	}

	long := newSession("alice-long", "alice", "prod", nil)
	long.Spec.TTL.Duration = 5 * time.Hour
	if _, err := s.Session.Create(registrytest.Context(ns), long, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a TTL beyond the policy's maxTTL: %v, want Invalid", err)
	} else if want := `must be at most 4h0m0s under SessionApprovalPolicy "shop"`; !strings.Contains(err.Error(), want) {
		t.Errorf("a TTL beyond the policy's maxTTL: %v, want it to say %q", err, want)
	}

	if _, _, err := policies.Delete(cluster, "shop", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	flagged := newSession("alice-flags", "alice", "prod", nil)
	flagged.Spec.AccessLevel.Group = "admin"
	if got := create(t, s, flagged); got.Status.ApprovalPolicy != nil || got.Status.Approvals[0].Required != 0 {
		t.Errorf("without a policy: %+v, want the flags' single approval", got.Status)
	}
}

// targetLabels is a TargetLabels of fixed labels per target name, or an
// error for every target.
type targetLabels struct {
	labels map[string]map[string]string
	err    error
}

func (l targetLabels) TargetLabels(_ context.Context, s *clustergate.Session) (map[string]string, error) {
	return l.labels[s.Spec.Target.Shoot.Name], l.err
}

// TestApprovalPolicyByTargetLabels: a policy that selects targets by label
// governs sessions to the targets so labelled only, and when the labels
// cannot be read the create is refused with 503, not left to the flags.
func TestApprovalPolicyByTargetLabels(t *testing.T) {
	scheme := registrytest.Scheme()
	production := map[string]map[string]string{"prod": {"env": "production"}, "dev": {"env": "dev"}}
	for _, tt := range []struct {
		name, target string
		labels       targetLabels
		wantPolicy   string
		wantErr      bool
	}{
		{name: "a production target", target: "prod", labels: targetLabels{labels: production}, wantPolicy: "production"},
		{name: "another target", target: "dev", labels: targetLabels{labels: production}},
		{name: "a target that does not exist", target: "gone", labels: targetLabels{labels: production}},
		{name: "labels unreadable", target: "prod", labels: targetLabels{err: errors.New("gardener: connection refused")}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			policies, err := policystorage.NewREST(scheme, registrytest.NewRESTOptions(t, scheme, "sessionapprovalpolicies"), tt.labels)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(policies.Destroy)
			s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{
				Limits: validation.DefaultSessionLimits(), Policies: policies,
				Proxy: ProxyConfig{Tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{})},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Session.Destroy)
			policy := &clustergate.SessionApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "production"}, Spec: clustergate.SessionApprovalPolicySpec{
				Sessions:         clustergate.SessionSelector{TargetLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "production"}}},
				ApprovalRequired: true, Approvers: &clustergate.SessionApprovers{Count: 2},
			}}
			if _, err := policies.Create(registrytest.Context(""), policy, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			session := newSession("alice", "alice", tt.target, nil)
			got, err := s.Session.Create(registrytest.Context(ns), session, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if tt.wantErr {
				if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "connection refused") {
					t.Fatalf("create: %v, want 503 naming why the labels cannot be read", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if p := got.(*clustergate.Session).Status.ApprovalPolicy; p != nil {
				name = p.Name
			}
			if name != tt.wantPolicy {
				t.Errorf("governed by %q, want %q", name, tt.wantPolicy)
			}
		})
	}
}
