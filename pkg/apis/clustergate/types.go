// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package clustergate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Session is a time-limited, owner-bound break-glass session to a target
// cluster. Its proxy subresource streams the owner's requests to the target
// with credentials the server minted and never hands out.
type Session struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   SessionSpec
	Status SessionStatus
}

// SessionSpec is what the creator asked for. It is immutable after create.
type SessionSpec struct {
	// TTL is how long the session lasts, counted from its creation.
	TTL metav1.Duration
	// Owner is the only user who may use the session's proxy.
	Owner SessionOwner
	// AccessLevel names the group the minted credentials carry on the target.
	AccessLevel AccessLevel
	// Target is the cluster the session reaches.
	Target SessionTarget
	// Reason is why the session is opened, such as an incident or a ticket.
	Reason string
	// IdleTimeout ends the session once it has gone unused that long; nil
	// or 0 is none.
	IdleTimeout *metav1.Duration
	// Scope narrows the session to some namespaces of its target; nil is
	// the whole target.
	Scope *SessionScope
}

// SessionScope is the part of a target a session reaches.
type SessionScope struct {
	// Namespaces are the namespaces of the target the session reaches.
	Namespaces []string
}

// SessionOwner identifies the user a session belongs to.
type SessionOwner struct {
	// Username is the owner's authenticated user name.
	Username string
	// UID is the owner's authenticated user UID, if the authenticator set one.
	UID string
	// Groups are the owner's groups at the time the session was created.
	Groups []string
}

// AccessLevel is the level of access a session grants on its target.
type AccessLevel struct {
	// Group is one of the server's configured session access groups.
	Group string
}

// SessionTarget names the cluster of a session: exactly one member is set.
type SessionTarget struct {
	// Shoot is a Gardener Shoot.
	Shoot *ShootReference
	// Cluster is a cluster reached through a kubeconfig Secret.
	Cluster *ClusterTarget
}

// ShootReference names a Gardener Shoot of a project.
type ShootReference struct {
	// Name is the Shoot's name.
	Name string
	// Project is the name of the Shoot's Gardener project (not its
	// namespace). Empty names the default project: that of the object's
	// namespace when it is a project namespace, else the server's
	// --gardener-project. The server fills it in at create.
	Project string
}

// ClusterTarget is a cluster whose credentials are minted with a
// certificates.k8s.io/v1 CertificateSigningRequest.
type ClusterTarget struct {
	// KubeconfigSecretRef names a Secret in the server's namespace holding a
	// kubeconfig that may create and approve CSRs on the target.
	KubeconfigSecretRef LocalSecretReference
	// SignerName is the CSR signer that issues the session's client certificate.
	SignerName string
}

// LocalSecretReference names a Secret in a namespace known from context.
type LocalSecretReference struct {
	// Name is the Secret's name.
	Name string
}

// SessionStatus is what the server observed and decided about a session.
type SessionStatus struct {
	// ExpiresAt is when the session ends: creationTimestamp + ttl, or the
	// approval's time + ttl; an extension moves it later, never earlier.
	ExpiresAt *metav1.Time
	// Endpoint is the API path of the session's proxy subresource.
	Endpoint string
	// BackendURL is the URL of the target's kube-apiserver.
	BackendURL string
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64
	// Conditions are CredentialsReady, AuthorizationPolicyReady, Ready and,
	// on sessions that need approval, Approved.
	Conditions []metav1.Condition
	// Approvals are the requests about the session that need a decision,
	// oldest first; only the last one may be pending.
	Approvals []SessionApproval
	// LastUsedAt is the last use of the session's proxy the replicas
	// recorded, coalesced to one write a minute.
	LastUsedAt *metav1.Time
	// ApprovalPolicy is the SessionApprovalPolicy that governs the
	// session's approvals, as it stood at creation; nil under the flags.
	ApprovalPolicy *AppliedApprovalPolicy
	// DeletedBy is the user whose delete request ended the session,
	// stamped by the server.
	DeletedBy string
}

// AppliedApprovalPolicy is what a session keeps of the SessionApprovalPolicy
// that governs it.
type AppliedApprovalPolicy struct {
	// Name is the policy's name.
	Name string
	// Generation is the policy's generation that was applied.
	Generation int64
	// ApprovalRequired says whether the session and its extensions wait
	// for approvers.
	ApprovalRequired bool
	// Approvers say who may decide and how many must approve.
	Approvers *SessionApprovers
	// AutoApprove is the policy's auto-approval, kept only when the owner
	// was in one of its groups at creation.
	AutoApprove *SessionAutoApproval
}

// SessionApproval is a request about a session that needs a decision, and
// the decision.
type SessionApproval struct {
	// Type says what is asked for: Open or Extend.
	Type SessionApprovalType
	// Duration is how much later an extension moves the expiry.
	Duration *metav1.Duration
	// RequestedBy is the user who asked.
	RequestedBy string
	// RequestedAt is when.
	RequestedAt metav1.Time
	// Decision is Pending, Approved or Denied.
	Decision ApprovalDecision
	// DecidedBy is the approver, stamped by the server.
	DecidedBy string
	// DecidedAt is when the approver decided, stamped by the server.
	DecidedAt *metav1.Time
	// Reason is the approver's why.
	Reason string
	// Policy is the SessionApprovalPolicy the request went through.
	Policy string
	// Required is how many distinct approvers must approve; 0 is one.
	Required int32
	// Decisions are every approver's decision, oldest first.
	Decisions []ApproverDecision
}

// ApproverDecision is one approver's decision on a request.
type ApproverDecision struct {
	// Approver is the user who decided.
	Approver string
	// Decision is Approved or Denied.
	Decision ApprovalDecision
	// DecidedAt is when.
	DecidedAt metav1.Time
	// Reason is the approver's why.
	Reason string
}

// SessionApprovalType says what an approval is about.
type SessionApprovalType string

const (
	// ApprovalOpen is the opening of a session.
	ApprovalOpen SessionApprovalType = "Open"
	// ApprovalExtend is an extension of a session.
	ApprovalExtend SessionApprovalType = "Extend"
)

// ApprovalDecision is the state of an approval.
type ApprovalDecision string

const (
	// ApprovalPending waits for an approver.
	ApprovalPending ApprovalDecision = "Pending"
	// ApprovalApproved was approved.
	ApprovalApproved ApprovalDecision = "Approved"
	// ApprovalDenied was denied.
	ApprovalDenied ApprovalDecision = "Denied"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionList is a list of Sessions.
type SessionList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []Session
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionProxyOptions is the query of a request to the sessions/proxy subresource.
type SessionProxyOptions struct {
	metav1.TypeMeta

	// Path is the path to forward to the target, below the proxy subresource.
	Path string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionKubeconfig is the answer of the sessions/kubeconfig subresource: a
// kubeconfig that reaches the session's proxy and carries no credentials.
type SessionKubeconfig struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// Kubeconfig is the kubeconfig file, YAML encoded.
	Kubeconfig []byte
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GardenerClusterKubeconfig keeps a dynamic kubeconfig for a Gardener Shoot in
// a Secret: fetched from Gardener, rotated before it expires, rotated on
// demand and removed when the object is deleted. Its spec has the shape of
// Kyma's GardenerCluster so that consumers keep working unchanged.
type GardenerClusterKubeconfig struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   GardenerClusterKubeconfigSpec
	Status GardenerClusterKubeconfigStatus
}

// GardenerClusterKubeconfigSpec names the Shoot and the Secret to keep.
type GardenerClusterKubeconfigSpec struct {
	// Shoot is the Gardener Shoot whose kubeconfig is kept; its project, if
	// empty, is filled in at create as for a session.
	Shoot ShootReference
	// Kubeconfig says where the kubeconfig is written.
	Kubeconfig KubeconfigTarget
}

// KubeconfigTarget says where a kubeconfig is written.
type KubeconfigTarget struct {
	// Secret is the Secret and data key that hold the kubeconfig.
	Secret SecretKeyReference
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	// Name is the Secret's name.
	Name string
	// Namespace is the Secret's namespace; it must be the object's own.
	Namespace string
	// Key is the data key that holds the kubeconfig.
	Key string
}

// KubeconfigState is the summary state of a GardenerClusterKubeconfig.
type KubeconfigState string

const (
	// KubeconfigStateReady means the Secret holds a valid kubeconfig.
	KubeconfigStateReady KubeconfigState = "Ready"
	// KubeconfigStateError means the last attempt to write the Secret failed.
	KubeconfigStateError KubeconfigState = "Error"
	// KubeconfigStateLocked means a SessionLock on the Shoot holds the
	// object: no kubeconfig is written until it goes, and the one in the
	// Secret, if any, expires.
	KubeconfigStateLocked KubeconfigState = "Locked"
)

// GardenerClusterKubeconfigStatus is what the server observed about the kubeconfig.
type GardenerClusterKubeconfigStatus struct {
	// State is Ready, Error or Locked.
	State KubeconfigState
	// LastSyncTime is when the kubeconfig in the Secret was last written.
	LastSyncTime *metav1.Time
	// ExpirationTime is when the kubeconfig in the Secret expires.
	ExpirationTime *metav1.Time
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64
	// Conditions holds KubeconfigReady.
	Conditions []metav1.Condition
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GardenerClusterKubeconfigList is a list of GardenerClusterKubeconfigs.
type GardenerClusterKubeconfigList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []GardenerClusterKubeconfig
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionLock freezes the sessions it matches: while it is in force, a
// matching session cannot be created or extended and its proxy refuses and
// ends every request. Cluster-scoped.
type SessionLock struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec SessionLockSpec
}

// SessionLockSpec says which sessions a lock matches, why and until when.
// Every member given must match (they combine with AND); at least one of
// User, Users, Group, Target and Namespace is given.
type SessionLockSpec struct {
	// User and Users name one person: a session matches when its owner, or
	// the requester of a request through it, has any of these user names.
	User  string
	Users []string
	// Group matches sessions whose owner had this group at creation, and
	// requests whose requester is in it now.
	Group string
	// Target matches sessions to this shoot or cluster.
	Target *SessionLockTarget
	// Namespace matches sessions in this namespace.
	Namespace string
	// Reason is why the lock is in force; required.
	Reason string
	// ExpiresAt ends the lock; nil is never.
	ExpiresAt *metav1.Time
}

// SessionLockTarget names a target as sessions name it: exactly one member
// is set.
type SessionLockTarget struct {
	// Shoot is a Gardener Shoot, by name and, if given, project.
	Shoot *ShootReference
	// Cluster is a cluster target, by the name of its kubeconfig Secret.
	Cluster *LocalSecretReference
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionLockList is a list of SessionLocks.
type SessionLockList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []SessionLock
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionApprovalPolicy says who must approve the sessions it selects, who
// may do so without a human, and how long and why such a session may be
// asked for. Cluster-scoped.
type SessionApprovalPolicy struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec SessionApprovalPolicySpec
}

// SessionApprovalPolicySpec says which sessions a policy selects and what
// it asks of them.
type SessionApprovalPolicySpec struct {
	// Sessions selects the sessions the policy governs.
	Sessions SessionSelector
	// ApprovalRequired makes the selected sessions wait for approvers.
	ApprovalRequired bool
	// Approvers say who may decide and how many must approve.
	Approvers *SessionApprovers
	// AutoApprove approves some owners' sessions without a human.
	AutoApprove *SessionAutoApproval
	// MaxTTL is the longest spec.ttl of a selected session; nil is the
	// server's.
	MaxTTL *metav1.Duration
	// RequireReason refuses a selected session without spec.reason.
	RequireReason bool
}

// SessionSelector selects sessions: every member given must match.
type SessionSelector struct {
	// Namespaces match sessions in any of them; empty is all.
	Namespaces []string
	// Targets match sessions to any of them; empty is all.
	Targets []SessionLockTarget
	// AccessLevels match sessions of any of these access groups; empty is all.
	AccessLevels []string
	// Scoped, when set, matches only scoped (true) or whole-target (false)
	// sessions.
	Scoped *bool
	// TargetLabels, when set, matches sessions whose target's labels it
	// selects: the Shoot's in Gardener, a cluster target's Secret's.
	TargetLabels *metav1.LabelSelector
}

// SessionApprovers say who may decide on a request and how many must
// approve it.
type SessionApprovers struct {
	// Count is how many distinct approvers must approve.
	Count int32
	// Users and Groups may decide; with neither, any holder of "approve".
	Users  []string
	Groups []string
	// ExcludeOwnerGroups refuse an approver who shares one with the owner.
	ExcludeOwnerGroups []string
}

// SessionAutoApproval approves requests of owners in some groups without a
// human, up to an access window of MaxTTL.
type SessionAutoApproval struct {
	// Groups are the owner's groups that qualify.
	Groups []string
	// MaxTTL is the longest access window approved so.
	MaxTTL metav1.Duration
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionApprovalPolicyList is a list of SessionApprovalPolicies.
type SessionApprovalPolicyList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []SessionApprovalPolicy
}
