// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "slices"

// PendingApproval returns the request of the session that waits for an
// approver, or nil when none does: only the last request can.
func (s *SessionStatus) PendingApproval() *SessionApproval {
	if n := len(s.Approvals); n > 0 && s.Approvals[n-1].Decision == ApprovalPending {
		return &s.Approvals[n-1]
	}
	return nil
}

// Approvers returns the distinct users who approved the request, in the
// order they did.
func (a *SessionApproval) Approvers() []string {
	var names []string
	for _, d := range a.Decisions {
		if d.Decision == ApprovalApproved && !slices.Contains(names, d.Approver) {
			names = append(names, d.Approver)
		}
	}
	return names
}

// RequiredApprovers is how many distinct approvers the request needs: at
// least one.
func (a *SessionApproval) RequiredApprovers() int32 { return max(a.Required, 1) }
