// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package approvalpolicy is the rule of which SessionApprovalPolicy governs
// a session, what the session keeps of it, and who may decide on its
// requests. The sessions storage (creates, extensions, approvals) and the
// SessionOwner admission plugin both ask it, so that they never disagree.
package approvalpolicy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// AutoApprover is the prefix of the decidedBy of a request a policy
// approved without a human: "policy:NAME".
const AutoApprover = "policy:"

// TargetLabels returns the labels of the session's target: the Shoot's in
// Gardener or the cluster target's Secret's. Governing calls it only when a
// policy selects by them, at most once.
type TargetLabels func() (map[string]string, error)

// Matches reports whether policy p selects session s: every member of its
// selector that is given matches. It reads the target's labels only when
// the policy selects by them and everything else matches.
func Matches(p *clustergate.SessionApprovalPolicy, s *clustergate.Session, targetLabels TargetLabels) (bool, error) {
	sel := &p.Spec.Sessions
	if len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, s.Namespace) {
		return false, nil
	}
	if len(sel.AccessLevels) > 0 && !slices.Contains(sel.AccessLevels, s.Spec.AccessLevel.Group) {
		return false, nil
	}
	if sel.Scoped != nil && *sel.Scoped != (s.Spec.Scope != nil) {
		return false, nil
	}
	if len(sel.Targets) > 0 && !slices.ContainsFunc(sel.Targets, func(t clustergate.SessionLockTarget) bool {
		return targetIs(&t, &s.Spec.Target)
	}) {
		return false, nil
	}
	if sel.TargetLabels == nil {
		return true, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel.TargetLabels)
	if err != nil {
		return false, fmt.Errorf("SessionApprovalPolicy %q: spec.sessions.targetLabels: %w", p.Name, err)
	}
	set, err := targetLabels()
	if err != nil {
		return false, err
	}
	return selector.Matches(labels.Set(set)), nil
}

func targetIs(t *clustergate.SessionLockTarget, target *clustergate.SessionTarget) bool {
	switch {
	case t.Shoot != nil:
		return target.Shoot != nil && v1alpha1.ShootMatches(v1alpha1.ShootReference(*t.Shoot), v1alpha1.ShootReference(*target.Shoot))
	case t.Cluster != nil:
		return target.Cluster != nil && target.Cluster.KubeconfigSecretRef.Name == t.Cluster.Name
	}
	return false
}

// Governing returns the strictest of policies that selects s, or nil when
// none does. Policies are compared on, in this order: approval required
// beats not; more approvers beat fewer; no auto-approval beats one, and a
// shorter auto-approval TTL a longer one; a shorter maxTTL beats a longer
// one or none; requireReason beats not; at last the name, earliest first,
// so that the choice never depends on the order of a list. The winner
// alone governs the session: its approvers, auto-approval, maxTTL and
// reason rule all apply, and those of the others do not. When the
// target's labels are needed and cannot be read, Governing fails rather
// than let a laxer policy, or none, govern the session.
func Governing(policies []clustergate.SessionApprovalPolicy, s *clustergate.Session, targetLabels TargetLabels) (*clustergate.SessionApprovalPolicy, error) {
	var (
		found *clustergate.SessionApprovalPolicy
		read  bool
		set   map[string]string
		err   error
	)
	once := func() (map[string]string, error) {
		if !read {
			set, err = targetLabels()
			read = true
		}
		return set, err
	}
	for i := range policies {
		p := &policies[i]
		if found != nil && !Stricter(p, found) {
			continue
		}
		matches, err := Matches(p, s, once)
		if err != nil {
			return nil, err
		}
		if matches {
			found = p
		}
	}
	return found, nil
}

// Stricter reports whether a is stricter than b, as Governing compares.
func Stricter(a, b *clustergate.SessionApprovalPolicy) bool {
	return compare(a, b) < 0
}

// compare orders the stricter policy first.
func compare(a, b *clustergate.SessionApprovalPolicy) int {
	if c := cmp.Compare(boolRank(b.Spec.ApprovalRequired), boolRank(a.Spec.ApprovalRequired)); c != 0 {
		return c
	}
	if c := cmp.Compare(Count(b.Spec.Approvers), Count(a.Spec.Approvers)); c != 0 {
		return c
	}
	if c := cmp.Compare(autoApproveTTL(a), autoApproveTTL(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(maxTTL(a), maxTTL(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(boolRank(b.Spec.RequireReason), boolRank(a.Spec.RequireReason)); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// autoApproveTTL is how long a window the policy approves without a human;
// none is 0, the strictest.
func autoApproveTTL(p *clustergate.SessionApprovalPolicy) time.Duration {
	if p.Spec.AutoApprove == nil {
		return 0
	}
	return p.Spec.AutoApprove.MaxTTL.Duration
}

// maxTTL is the policy's maxTTL; none is the longest.
func maxTTL(p *clustergate.SessionApprovalPolicy) time.Duration {
	if p.Spec.MaxTTL == nil {
		return time.Duration(1<<63 - 1)
	}
	return p.Spec.MaxTTL.Duration
}

// Count is how many distinct approvers approvers need: at least one.
func Count(approvers *clustergate.SessionApprovers) int32 {
	if approvers == nil || approvers.Count < 1 {
		return 1
	}
	return approvers.Count
}

// Apply is what session s keeps of policy p, which governs it: the
// auto-approval only when the owner is in one of its groups.
func Apply(p *clustergate.SessionApprovalPolicy, s *clustergate.Session) *clustergate.AppliedApprovalPolicy {
	applied := &clustergate.AppliedApprovalPolicy{Name: p.Name, Generation: p.Generation, ApprovalRequired: p.Spec.ApprovalRequired}
	if !p.Spec.ApprovalRequired {
		return applied
	}
	if a := p.Spec.Approvers; a != nil {
		applied.Approvers = a.DeepCopy()
	}
	if a := p.Spec.AutoApprove; a != nil && shares(a.Groups, s.Spec.Owner.Groups) != "" {
		applied.AutoApprove = a.DeepCopy()
	}
	return applied
}

// AutoApproves reports whether the policy the session keeps approves an
// access window of window without a human.
func AutoApproves(applied *clustergate.AppliedApprovalPolicy, window time.Duration) bool {
	return applied != nil && applied.ApprovalRequired && applied.AutoApprove != nil && window <= applied.AutoApprove.MaxTTL.Duration
}

// AutoApproval is the approval a policy gives without a human, at now,
// to a request of requester of typ (and duration, for an extension).
func AutoApproval(applied *clustergate.AppliedApprovalPolicy, typ clustergate.SessionApprovalType, duration time.Duration,
	requester string, now time.Time, window time.Duration) clustergate.SessionApproval {
	a := Request(applied, typ, duration, requester, now)
	a.Decision, a.DecidedBy = clustergate.ApprovalApproved, AutoApprover+applied.Name
	a.DecidedAt = a.RequestedAt.DeepCopy()
	a.Reason = fmt.Sprintf("auto-approved: the owner is in a group of %v and the access window %s is at most %s",
		applied.AutoApprove.Groups, window, applied.AutoApprove.MaxTTL.Duration)
	return a
}

// Request is a pending request of typ by requester at now, under the
// applied policy (nil: under the server's flags).
func Request(applied *clustergate.AppliedApprovalPolicy, typ clustergate.SessionApprovalType, duration time.Duration,
	requester string, now time.Time) clustergate.SessionApproval {
	a := clustergate.SessionApproval{Type: typ, RequestedBy: requester, Decision: clustergate.ApprovalPending}
	a.RequestedAt.Time = now
	if typ == clustergate.ApprovalExtend {
		a.Duration = &metav1.Duration{Duration: duration}
	}
	if applied != nil {
		a.Policy, a.Required = applied.Name, Count(applied.Approvers)
	}
	return a
}

// Refusal says why user, with groups, may not decide on the requests of
// session s under the policy it keeps, or "" when the policy lets them (the
// verb "approve" and the four-eyes rule are asked elsewhere).
func Refusal(s *clustergate.Session, user string, groups []string) string {
	applied := s.Status.ApprovalPolicy
	if applied == nil || applied.Approvers == nil {
		return ""
	}
	a := applied.Approvers
	if (len(a.Users) > 0 || len(a.Groups) > 0) && !slices.Contains(a.Users, user) && shares(a.Groups, groups) == "" {
		return fmt.Sprintf("SessionApprovalPolicy %q lets only %s decide", applied.Name, Who(a.Users, a.Groups))
	}
	if g := shares(a.ExcludeOwnerGroups, sharedWith(groups, s.Spec.Owner.Groups)); g != "" {
		return fmt.Sprintf("SessionApprovalPolicy %q refuses approvers who share the group %q with the owner %q", applied.Name, g, s.Spec.Owner.Username)
	}
	return ""
}

// Who says who may decide when users and groups are named: "the users
// [..] and the members of the groups [..]", or, with neither, "holders of
// the verb "approve"". It takes the lists alone so that clients of any API
// version say it alike.
func Who(users, groups []string) string {
	switch {
	case len(users) > 0 && len(groups) > 0:
		return fmt.Sprintf("the users %q and the members of the groups %q", users, groups)
	case len(users) > 0:
		return fmt.Sprintf("the users %q", users)
	case len(groups) > 0:
		return fmt.Sprintf("the members of the groups %q", groups)
	}
	return "holders of the verb \"approve\""
}

// shares returns the first of groups that is in others, or "".
func shares(groups, others []string) string {
	for _, g := range groups {
		if slices.Contains(others, g) {
			return g
		}
	}
	return ""
}

// sharedWith returns the groups in both a and b.
func sharedWith(a, b []string) []string {
	var both []string
	for _, g := range a {
		if slices.Contains(b, g) {
			both = append(both, g)
		}
	}
	return both
}
