// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=UpdateApproval,verb=update,subresource=approval
// +genclient:method=UpdateExtension,verb=update,subresource=extension
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Session is a time-limited, owner-bound break-glass session to a target
// cluster. Its proxy subresource streams the owner's requests to the target
// with credentials the server minted and never hands out.
type Session struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is what the creator asked for. It is immutable after create.
	Spec SessionSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the server observed and decided.
	// +optional
	Status SessionStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// SessionSpec is what the creator asked for. It is immutable after create.
type SessionSpec struct {
	// TTL is how long the session lasts, counted from its creation or, for an
	// access group that needs approval, from its approval, for example "1h".
	// It must lie within the server's --session-min-ttl and --session-max-ttl.
	TTL metav1.Duration `json:"ttl" protobuf:"bytes,1,opt,name=ttl"`
	// Owner is the only user who may use the session's proxy. It is stamped
	// from the creator; naming someone else needs the verb "assign" on sessions.
	// +optional
	Owner SessionOwner `json:"owner,omitempty" protobuf:"bytes,2,opt,name=owner"`
	// AccessLevel names the group the minted credentials carry on the target.
	AccessLevel AccessLevel `json:"accessLevel" protobuf:"bytes,3,opt,name=accessLevel"`
	// Target is the cluster the session reaches.
	Target SessionTarget `json:"target" protobuf:"bytes,4,opt,name=target"`
	// Reason is why the session is opened, such as an incident or a ticket;
	// at most 512 characters. Servers started with --session-require-reason
	// refuse a session without one.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// IdleTimeout ends the session once neither a proxied request nor an
	// open stream has used it for that long, counted from status.lastUsedAt
	// (or from the start of its access window before any use), for example
	// "30m". Unset, the server's --session-idle-timeout applies; "0s" is
	// none. It lies within the server's bounds: at least four times
	// --session-last-used-interval (4m by default) and at most
	// --session-max-idle-timeout, which, when set, also refuses none.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty" protobuf:"bytes,6,opt,name=idleTimeout"`
	// Scope narrows the session to some namespaces of its target. Unset, the
	// access level holds cluster-wide, through the level's group on the
	// target. Set, the credentials carry no cluster-wide group: the server
	// binds the level's namespaced ClusterRole to the session in each listed
	// namespace of the target, and its proxy refuses requests outside them.
	// +optional
	Scope *SessionScope `json:"scope,omitempty" protobuf:"bytes,7,opt,name=scope"`
}

// SessionScope is the part of a target a session reaches.
type SessionScope struct {
	// Namespaces are the namespaces of the target the session reaches: at
	// least one, at most 16, each a DNS label, none twice.
	// +listType=set
	Namespaces []string `json:"namespaces" protobuf:"bytes,1,rep,name=namespaces"`
}

// SessionOwner identifies the user a session belongs to.
type SessionOwner struct {
	// Username is the owner's authenticated user name.
	Username string `json:"username" protobuf:"bytes,1,opt,name=username"`
	// UID is the owner's authenticated user UID, if the authenticator set one.
	// +optional
	UID string `json:"uid,omitempty" protobuf:"bytes,2,opt,name=uid"`
	// Groups are the owner's groups at the time the session was created.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty" protobuf:"bytes,3,rep,name=groups"`
}

// AccessLevel is the level of access a session grants on its target.
type AccessLevel struct {
	// Group is one of the server's --session-access-groups, such as "admin"
	// or "viewer".
	Group string `json:"group" protobuf:"bytes,1,opt,name=group"`
}

// SessionTarget names the cluster of a session: exactly one member is set.
// +union
type SessionTarget struct {
	// Shoot is a Gardener Shoot.
	// +optional
	Shoot *ShootReference `json:"shoot,omitempty" protobuf:"bytes,1,opt,name=shoot"`
	// Cluster is a cluster reached through a kubeconfig Secret.
	// +optional
	Cluster *ClusterTarget `json:"cluster,omitempty" protobuf:"bytes,2,opt,name=cluster"`
}

// ShootReference names a Gardener Shoot of a project.
type ShootReference struct {
	// Name is the Shoot's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Project is the name of the Shoot's Gardener project, such as "shop"
	// (not its namespace, garden-shop). Sessions and
	// GardenerClusterKubeconfigs that leave it empty are for the default
	// project, which the server fills in at create: the project whose
	// namespace the object is in (garden-<project>), or else the server's
	// --gardener-project. In a SessionLock or a SessionApprovalPolicy,
	// empty matches the Shoot of that name in every project.
	// +optional
	Project string `json:"project,omitempty" protobuf:"bytes,2,opt,name=project"`
}

// ClusterTarget is a cluster whose credentials are minted with a
// certificates.k8s.io/v1 CertificateSigningRequest.
type ClusterTarget struct {
	// KubeconfigSecretRef names a Secret in the server's namespace holding a
	// kubeconfig that may create and approve CSRs on the target.
	KubeconfigSecretRef LocalSecretReference `json:"kubeconfigSecretRef" protobuf:"bytes,1,opt,name=kubeconfigSecretRef"`
	// SignerName is the CSR signer that issues the session's client
	// certificate. Defaults to kubernetes.io/kube-apiserver-client.
	// +optional
	SignerName string `json:"signerName,omitempty" protobuf:"bytes,2,opt,name=signerName"`
}

// LocalSecretReference names a Secret in a namespace known from context.
type LocalSecretReference struct {
	// Name is the Secret's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
}

// SessionStatus is what the server observed and decided about a session.
type SessionStatus struct {
	// ExpiresAt is when the session ends: creationTimestamp + ttl, or, for an
	// access group that needs approval, the approval's time + ttl (unset until
	// then). An extension moves it later; nothing moves it earlier.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty" protobuf:"bytes,1,opt,name=expiresAt"`
	// Endpoint is the API path of the session's proxy subresource.
	// +optional
	Endpoint string `json:"endpoint,omitempty" protobuf:"bytes,2,opt,name=endpoint"`
	// BackendURL is the URL of the target's kube-apiserver.
	// +optional
	BackendURL string `json:"backendURL,omitempty" protobuf:"bytes,3,opt,name=backendURL"`
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,4,opt,name=observedGeneration"`
	// Conditions are CredentialsReady, AuthorizationPolicyReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,5,rep,name=conditions"`
	// Approvals are the requests about the session that need a decision,
	// oldest first: its opening, for an access group in the server's
	// --session-approval-groups, and each extension of such a session. Only
	// the last one may be pending; it is decided through the approval
	// subresource.
	// +optional
	// +listType=atomic
	Approvals []SessionApproval `json:"approvals,omitempty" protobuf:"bytes,6,rep,name=approvals"`
	// LastUsedAt is the last use of the session's proxy, by a request or an
	// open stream, that the replicas serving it recorded. Replicas write it
	// at most once per --session-last-used-interval (a minute by default)
	// per session between them, so it may lag the last use by up to about
	// that; it never moves earlier. The idle deadline is lastUsedAt +
	// spec.idleTimeout.
	// +optional
	LastUsedAt *metav1.Time `json:"lastUsedAt,omitempty" protobuf:"bytes,7,opt,name=lastUsedAt"`
	// ApprovalPolicy is the SessionApprovalPolicy that governs the
	// session's approvals, as it stood when the session was created: a
	// policy changed or deleted later does not change the decisions the
	// session waits for, its extensions included. Unset, no policy matched
	// and the server's flags (--session-approval-groups) apply.
	// +optional
	ApprovalPolicy *AppliedApprovalPolicy `json:"approvalPolicy,omitempty" protobuf:"bytes,8,opt,name=approvalPolicy"`
	// DeletedBy is the user whose delete request ended the session, stamped
	// by the server with its deletionTimestamp: the revoker of a session
	// deleted before its expiry (the session's revoked event names them).
	// Nobody sets it otherwise.
	// +optional
	DeletedBy string `json:"deletedBy,omitempty" protobuf:"bytes,9,opt,name=deletedBy"`
}

// AppliedApprovalPolicy is what a session keeps of the SessionApprovalPolicy
// that governs it.
type AppliedApprovalPolicy struct {
	// Name is the policy's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Generation is the policy's metadata.generation that was applied.
	// +optional
	Generation int64 `json:"generation,omitempty" protobuf:"varint,2,opt,name=generation"`
	// ApprovalRequired says whether the session and its extensions wait for
	// approvers.
	// +optional
	ApprovalRequired bool `json:"approvalRequired,omitempty" protobuf:"varint,3,opt,name=approvalRequired"`
	// Approvers say who may decide and how many must approve.
	// +optional
	Approvers *SessionApprovers `json:"approvers,omitempty" protobuf:"bytes,4,opt,name=approvers"`
	// AutoApprove is the policy's auto-approval, kept only when the owner
	// was in one of its groups at creation: requests that keep the session
	// within its maxTTL are approved without a human.
	// +optional
	AutoApprove *SessionAutoApproval `json:"autoApprove,omitempty" protobuf:"bytes,5,opt,name=autoApprove"`
}

// SessionApproval is a request about a session that needs a decision, and
// the decision.
type SessionApproval struct {
	// Type says what is asked for: Open or Extend.
	Type SessionApprovalType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=SessionApprovalType"`
	// Duration is how much later an extension moves the expiry.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty" protobuf:"bytes,2,opt,name=duration"`
	// RequestedBy is the user who asked.
	RequestedBy string `json:"requestedBy" protobuf:"bytes,3,opt,name=requestedBy"`
	// RequestedAt is when.
	RequestedAt metav1.Time `json:"requestedAt" protobuf:"bytes,4,opt,name=requestedAt"`
	// Decision is Pending until an approver decides: Approved or Denied.
	Decision ApprovalDecision `json:"decision" protobuf:"bytes,5,opt,name=decision,casttype=ApprovalDecision"`
	// DecidedBy is the approver, stamped by the server.
	// +optional
	DecidedBy string `json:"decidedBy,omitempty" protobuf:"bytes,6,opt,name=decidedBy"`
	// DecidedAt is when the approver decided, stamped by the server.
	// +optional
	DecidedAt *metav1.Time `json:"decidedAt,omitempty" protobuf:"bytes,7,opt,name=decidedAt"`
	// Reason is the approver's why; at most 512 characters.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,8,opt,name=reason"`
	// Policy is the SessionApprovalPolicy the request went through, unset
	// under the server's flags. An auto-approval is decided by
	// "policy:NAME".
	// +optional
	Policy string `json:"policy,omitempty" protobuf:"bytes,9,opt,name=policy"`
	// Required is how many distinct approvers must approve; unset is one.
	// +optional
	Required int32 `json:"required,omitempty" protobuf:"varint,10,opt,name=required"`
	// Decisions are every approver's decision, oldest first, stamped by the
	// server. The request is approved once required of them approved, and
	// denied by the first denial; decidedBy, decidedAt and reason then
	// repeat the decision that settled it.
	// +optional
	// +listType=atomic
	Decisions []ApproverDecision `json:"decisions,omitempty" protobuf:"bytes,11,rep,name=decisions"`
}

// ApproverDecision is one approver's decision on a request.
type ApproverDecision struct {
	// Approver is the user who decided.
	Approver string `json:"approver" protobuf:"bytes,1,opt,name=approver"`
	// Decision is Approved or Denied.
	Decision ApprovalDecision `json:"decision" protobuf:"bytes,2,opt,name=decision,casttype=ApprovalDecision"`
	// DecidedAt is when.
	DecidedAt metav1.Time `json:"decidedAt" protobuf:"bytes,3,opt,name=decidedAt"`
	// Reason is the approver's why.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`
}

// SessionApprovalType says what an approval is about.
// +enum
type SessionApprovalType string

const (
	// ApprovalOpen is the opening of a session: its access window starts
	// when it is approved.
	ApprovalOpen SessionApprovalType = "Open"
	// ApprovalExtend is an extension: the expiry moves later by its
	// duration when it is approved.
	ApprovalExtend SessionApprovalType = "Extend"
)

// ApprovalDecision is the state of an approval.
// +enum
type ApprovalDecision string

const (
	// ApprovalPending waits for an approver.
	ApprovalPending ApprovalDecision = "Pending"
	// ApprovalApproved was approved.
	ApprovalApproved ApprovalDecision = "Approved"
	// ApprovalDenied was denied.
	ApprovalDenied ApprovalDecision = "Denied"
)

// Condition types of a Session.
const (
	// SessionConditionCredentialsReady: the server holds credentials for the target.
	SessionConditionCredentialsReady = "CredentialsReady"
	// SessionConditionAuthorizationPolicyReady: the session's Istio policy is in place.
	SessionConditionAuthorizationPolicyReady = "AuthorizationPolicyReady"
	// SessionConditionReady: the owner may use the session's proxy.
	SessionConditionReady = "Ready"
	// SessionConditionApproved: the last approval's decision (Unknown while
	// it is pending), on sessions that need approval.
	SessionConditionApproved = "Approved"
	// SessionConditionScopeReady: a scoped session's RoleBindings are in
	// place in every namespace of its scope on the target.
	SessionConditionScopeReady = "ScopeReady"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionList is a list of Sessions.
type SessionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the Sessions.
	Items []Session `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +k8s:conversion-gen:explicit-from=net/url.Values
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionProxyOptions is the query of a request to the sessions/proxy subresource.
type SessionProxyOptions struct {
	metav1.TypeMeta `json:",inline"`

	// Path is the path to forward to the target, below the proxy subresource.
	// +optional
	Path string `json:"path,omitempty" protobuf:"bytes,1,opt,name=path"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionKubeconfig is the answer of the sessions/kubeconfig subresource: a
// kubeconfig that reaches the session's proxy and carries no credentials.
type SessionKubeconfig struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Kubeconfig is the kubeconfig file, YAML encoded.
	Kubeconfig []byte `json:"kubeconfig" protobuf:"bytes,2,opt,name=kubeconfig"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GardenerClusterKubeconfig keeps a dynamic kubeconfig for a Gardener Shoot in
// a Secret: fetched from Gardener, rotated before it expires, rotated on
// demand and removed when the object is deleted. Its spec has the shape of
// Kyma's GardenerCluster so that consumers keep working unchanged.
type GardenerClusterKubeconfig struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec names the Shoot and the Secret to keep.
	Spec GardenerClusterKubeconfigSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the server observed about the kubeconfig.
	// +optional
	Status GardenerClusterKubeconfigStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// GardenerClusterKubeconfigSpec names the Shoot and the Secret to keep.
type GardenerClusterKubeconfigSpec struct {
	// Shoot is the Gardener Shoot whose kubeconfig is kept.
	Shoot ShootReference `json:"shoot" protobuf:"bytes,1,opt,name=shoot"`
	// Kubeconfig says where the kubeconfig is written.
	Kubeconfig KubeconfigTarget `json:"kubeconfig" protobuf:"bytes,2,opt,name=kubeconfig"`
}

// KubeconfigTarget says where a kubeconfig is written.
type KubeconfigTarget struct {
	// Secret is the Secret and data key that hold the kubeconfig.
	Secret SecretKeyReference `json:"secret" protobuf:"bytes,1,opt,name=secret"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	// Name is the Secret's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Namespace is the Secret's namespace. It defaults to, and must equal,
	// the object's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// Key is the data key that holds the kubeconfig. Defaults to "config".
	// +optional
	Key string `json:"key,omitempty" protobuf:"bytes,3,opt,name=key"`
}

// KubeconfigState is the summary state of a GardenerClusterKubeconfig.
// +enum
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
	// +optional
	State KubeconfigState `json:"state,omitempty" protobuf:"bytes,1,opt,name=state,casttype=KubeconfigState"`
	// LastSyncTime is when the kubeconfig in the Secret was last written.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty" protobuf:"bytes,2,opt,name=lastSyncTime"`
	// ExpirationTime is when the kubeconfig in the Secret expires.
	// +optional
	ExpirationTime *metav1.Time `json:"expirationTime,omitempty" protobuf:"bytes,3,opt,name=expirationTime"`
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,4,opt,name=observedGeneration"`
	// Conditions holds KubeconfigReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,5,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GardenerClusterKubeconfigList is a list of GardenerClusterKubeconfigs.
type GardenerClusterKubeconfigList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the GardenerClusterKubeconfigs.
	Items []GardenerClusterKubeconfig `json:"items" protobuf:"bytes,2,rep,name=items"`
}
