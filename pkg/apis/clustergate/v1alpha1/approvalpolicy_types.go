// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionApprovalPolicy says who must approve the sessions it selects, who
// may do so without a human, and how long and why such a session may be
// asked for. Of the policies that select a session when it is created,
// the strictest governs it (see docs/security.md, "Approval policies"),
// and the session keeps what it said in status.approvalPolicy; with none,
// the server's flags apply. Cluster-scoped.
type SessionApprovalPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec says which sessions the policy selects and what it asks of them.
	Spec SessionApprovalPolicySpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// SessionApprovalPolicySpec says which sessions a policy selects and what
// it asks of them.
type SessionApprovalPolicySpec struct {
	// Sessions selects the sessions the policy governs.
	Sessions SessionSelector `json:"sessions" protobuf:"bytes,1,opt,name=sessions"`
	// ApprovalRequired makes the selected sessions, and their extensions,
	// wait for approvers.
	// +optional
	ApprovalRequired bool `json:"approvalRequired,omitempty" protobuf:"varint,2,opt,name=approvalRequired"`
	// Approvers say who may decide and how many must approve; only with
	// approvalRequired. Unset, one holder of the verb "approve" decides.
	// +optional
	Approvers *SessionApprovers `json:"approvers,omitempty" protobuf:"bytes,3,opt,name=approvers"`
	// AutoApprove approves the sessions of owners in some groups without a
	// human, up to a TTL; only with approvalRequired.
	// +optional
	AutoApprove *SessionAutoApproval `json:"autoApprove,omitempty" protobuf:"bytes,4,opt,name=autoApprove"`
	// MaxTTL is the longest spec.ttl of a selected session, within the
	// server's --session-max-ttl.
	// +optional
	MaxTTL *metav1.Duration `json:"maxTTL,omitempty" protobuf:"bytes,5,opt,name=maxTTL"`
	// RequireReason refuses a selected session without spec.reason.
	// +optional
	RequireReason bool `json:"requireReason,omitempty" protobuf:"varint,6,opt,name=requireReason"`
}

// SessionSelector selects sessions: every member given must match (they
// combine with AND), and an empty selector selects every session.
type SessionSelector struct {
	// Namespaces match sessions in any of these namespaces; empty is all.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty" protobuf:"bytes,1,rep,name=namespaces"`
	// Targets match sessions to any of these shoots or clusters; empty is
	// all.
	// +optional
	// +listType=atomic
	Targets []SessionLockTarget `json:"targets,omitempty" protobuf:"bytes,2,rep,name=targets"`
	// AccessLevels match sessions of any of these access groups
	// (spec.accessLevel.group); empty is all.
	// +optional
	// +listType=set
	AccessLevels []string `json:"accessLevels,omitempty" protobuf:"bytes,3,rep,name=accessLevels"`
	// Scoped, when set, matches only scoped sessions (true: with
	// spec.scope) or only whole-target ones (false).
	// +optional
	Scoped *bool `json:"scoped,omitempty" protobuf:"varint,4,opt,name=scoped"`
	// TargetLabels match sessions whose target carries labels this
	// selector selects: a Shoot's labels in Gardener, or a cluster
	// target's kubeconfig Secret's labels, for example env: production.
	// They are read when a session is created; a Shoot that does not
	// exist has none, and a target whose labels cannot be read then
	// refuses the session (503) rather than let a laxer policy govern it.
	// +optional
	TargetLabels *metav1.LabelSelector `json:"targetLabels,omitempty" protobuf:"bytes,5,opt,name=targetLabels"`
}

// SessionApprovers say who may decide on a request and how many must
// approve it. Whoever decides also needs the verb "approve" on the
// session, and never decides on their own session or request.
type SessionApprovers struct {
	// Count is how many distinct approvers must approve; 1 to 10, 1 by
	// default. A single denial ends the request.
	// +optional
	Count int32 `json:"count,omitempty" protobuf:"varint,1,opt,name=count"`
	// Users may decide. With neither users nor groups, any holder of
	// "approve" may.
	// +optional
	// +listType=set
	Users []string `json:"users,omitempty" protobuf:"bytes,2,rep,name=users"`
	// Groups may decide: their members may.
	// +optional
	// +listType=set
	Groups []string `json:"groups,omitempty" protobuf:"bytes,3,rep,name=groups"`
	// ExcludeOwnerGroups refuse an approver who shares one of these groups
	// with the session's owner (spec.owner.groups): nobody approves their
	// own team's session.
	// +optional
	// +listType=set
	ExcludeOwnerGroups []string `json:"excludeOwnerGroups,omitempty" protobuf:"bytes,4,rep,name=excludeOwnerGroups"`
}

// SessionAutoApproval approves requests of owners in some groups without a
// human.
type SessionAutoApproval struct {
	// Groups are the owner's groups (spec.owner.groups) that qualify: any
	// one of them.
	// +listType=set
	Groups []string `json:"groups" protobuf:"bytes,1,rep,name=groups"`
	// MaxTTL is the longest access window approved so: a session whose
	// spec.ttl, or an extension that keeps the session's access window, is
	// at most this long is approved by "policy:NAME".
	MaxTTL metav1.Duration `json:"maxTTL" protobuf:"bytes,2,opt,name=maxTTL"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionApprovalPolicyList is a list of SessionApprovalPolicies.
type SessionApprovalPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the SessionApprovalPolicies.
	Items []SessionApprovalPolicy `json:"items" protobuf:"bytes,2,rep,name=items"`
}
