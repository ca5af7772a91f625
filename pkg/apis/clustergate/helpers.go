// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package clustergate

// PendingApproval returns the request of the session that waits for an
// approver, or nil when none does: only the last request can.
func (s *SessionStatus) PendingApproval() *SessionApproval {
	if n := len(s.Approvals); n > 0 && s.Approvals[n-1].Decision == ApprovalPending {
		return &s.Approvals[n-1]
	}
	return nil
}
