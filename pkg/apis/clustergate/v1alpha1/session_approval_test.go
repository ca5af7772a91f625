// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"testing"
)

func TestApproversAreDistinct(t *testing.T) {
	a := SessionApproval{Required: 2, Decisions: []ApproverDecision{
		{Approver: "bob", Decision: ApprovalApproved}, {Approver: "bob", Decision: ApprovalApproved}, {Approver: "dave", Decision: ApprovalDenied}}}
	if got := a.Approvers(); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("Approvers = %q, want [bob]", got)
	}
	a.Decisions = append(a.Decisions, ApproverDecision{Approver: "carol", Decision: ApprovalApproved})
	if got := a.Approvers(); !slices.Equal(got, []string{"bob", "carol"}) {
		t.Errorf("Approvers = %q, want [bob carol]", got)
	}
	if got := (&SessionApproval{}).RequiredApprovers(); got != 1 {
		t.Errorf("RequiredApprovers of a request under the flags = %d, want 1", got)
	}
}
