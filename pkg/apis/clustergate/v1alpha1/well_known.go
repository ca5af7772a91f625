// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// What users and their tools see on the objects the server keeps: condition
// reasons, finalizers, and the labels and annotations of the Secrets of
// GardenerClusterKubeconfigs. They are part of the API: alerts, scripts and
// Kyma's consumers match on them.

// Finalizers the server's controllers put on their objects.
const (
	// SessionFinalizer holds a deleted Session until its RoleBindings (of
	// a scoped session), credentials, CSR and policy are gone.
	SessionFinalizer = "clustergate.dev/session-cleanup"
	// KubeconfigFinalizer holds a deleted GardenerClusterKubeconfig until
	// its Secret is gone.
	KubeconfigFinalizer = "clustergate.dev/kubeconfig-secret"
)

// Reasons of a Session's conditions.
const (
	SessionReasonMinted             = "Minted"
	SessionReasonMinting            = "Minting"
	SessionReasonTargetNotFound     = "TargetNotFound"
	SessionReasonTargetNotMarked    = "TargetNotMarked"
	SessionReasonTargetUnreachable  = "TargetUnreachable"
	SessionReasonTargetForbidden    = "TargetForbidden"
	SessionReasonTargetInsecure     = "TargetInsecure"
	SessionReasonAccessLevelInvalid = "AccessLevelUnsupported"
	SessionReasonCSRPending         = "CSRPending"
	SessionReasonCSRDenied          = "CSRDenied"
	SessionReasonCSRFailed          = "CSRFailed"
	SessionReasonCertificateInvalid = "CertificateInvalid"
	SessionReasonPolicyApplied      = "PolicyApplied"
	SessionReasonPolicyDisabled     = "PolicyDisabled"
	SessionReasonIstioNotInstalled  = "IstioNotInstalled"
	SessionReasonPolicyConflict     = "PolicyConflict"
	SessionReasonCredentialsPending = "CredentialsNotReady"
)

// Reasons of a scoped session's ScopeReady condition, besides the target's
// own (TargetUnreachable, TargetForbidden, ...), AccessLevelUnsupported and
// Idle.
const (
	// SessionReasonBound: the RoleBindings exist in every namespace.
	SessionReasonBound = "Bound"
	// SessionReasonBinding: some RoleBindings are yet to be made.
	SessionReasonBinding = "Binding"
	// SessionReasonNamespaceNotFound: a namespace of the scope does not
	// exist on the target (or is being deleted).
	SessionReasonNamespaceNotFound = "NamespaceNotFound"
	// SessionReasonClusterRoleNotFound: the level's namespacedClusterRole
	// does not exist on the target.
	SessionReasonClusterRoleNotFound = "ClusterRoleNotFound"
)

// KubeconfigConditionReady is the condition of a GardenerClusterKubeconfig.
const KubeconfigConditionReady = "KubeconfigReady"

// Reasons of the KubeconfigReady condition, of events and of metrics.
const (
	KubeconfigReasonCreated        = "Created"
	KubeconfigReasonRotated        = "Rotated"
	KubeconfigReasonForced         = "ForcedRotation"
	KubeconfigReasonRepaired       = "Repaired"
	KubeconfigReasonAdopted        = "Adopted"
	KubeconfigReasonSecretConflict = "SecretConflict"
	// KubeconfigReasonLocked: a SessionLock on the Shoot holds the object.
	KubeconfigReasonLocked = "Locked"
	// KubeconfigReasonUnlocked is the event of a lock that no longer holds
	// the object.
	KubeconfigReasonUnlocked = "Unlocked"
)

// Labels and annotations of the Secret of a GardenerClusterKubeconfig. The
// operator.kyma-project.io names are those of Kyma's
// infrastructure-manager, so its consumers keep working.
const (
	// LabelManagedBy says who manages a kubeconfig Secret.
	LabelManagedBy = "operator.kyma-project.io/managed-by"
	// LabelClusterName names the GardenerClusterKubeconfig of a Secret.
	LabelClusterName = "operator.kyma-project.io/cluster-name"
	// ManagedByClustergate is the value of LabelManagedBy on Secrets the
	// server owns.
	ManagedByClustergate = "clustergate"
	// ManagedByKyma marks Secrets of Kyma's infrastructure-manager, which
	// are adopted when their cluster-name matches.
	ManagedByKyma = "infrastructure-manager"

	// AnnotationLastSync is when the kubeconfig was last written.
	AnnotationLastSync = "operator.kyma-project.io/last-sync"
	// AnnotationForceRotation and AnnotationForceRotationShort request a
	// rotation, on the object or on its Secret.
	AnnotationForceRotation      = "operator.kyma-project.io/force-kubeconfig-rotation"
	AnnotationForceRotationShort = "clustergate.dev/force-rotation"
	// AnnotationExpiresAt records when the kubeconfig in the Secret expires.
	AnnotationExpiresAt = "clustergate.dev/expires-at"
	// AnnotationChecksum is the SHA-256 of the kubeconfig as written, to
	// notice edits.
	AnnotationChecksum = "clustergate.dev/checksum"
	// AnnotationReason is why the kubeconfig was last written.
	AnnotationReason = "clustergate.dev/reason"
	// AnnotationForcedBy is the resourceVersion of the object whose force
	// annotation the last write honoured.
	AnnotationForcedBy = "clustergate.dev/forced-by"
)

// Reasons of a Session's Approved condition and of the events of its
// lifecycle.
const (
	SessionReasonWaitingForApproval          = "WaitingForApproval"
	SessionReasonApproved                    = "Approved"
	SessionReasonDenied                      = "Denied"
	SessionReasonApprovalTimedOut            = "ApprovalTimedOut"
	SessionReasonExtensionWaitingForApproval = "ExtensionWaitingForApproval"
	SessionReasonExtensionApproved           = "ExtensionApproved"
	SessionReasonExtensionDenied             = "ExtensionDenied"
	SessionReasonExpired                     = "Expired"
	// SessionReasonIdle is the reason of the Ready and CredentialsReady
	// conditions and of the event of a session that went unused for its
	// spec.idleTimeout.
	SessionReasonIdle = "Idle"
	// SessionReasonLocked is the reason of the Ready condition and of the
	// event of a session a SessionLock holds; SessionReasonUnlocked of the
	// event once none does.
	SessionReasonLocked   = "Locked"
	SessionReasonUnlocked = "Unlocked"
)

// DataPlanePathPrefix starts every path the data plane serves:
// DataPlaneSessionPath, then the path on the target.
const DataPlanePathPrefix = "/sessions/"

// DataPlaneSessionPath is the path at which the data plane serves the
// session namespace/name, without a trailing slash; the path on the target
// follows it. The data plane, the sessions' Istio AuthorizationPolicies and
// the kubeconfigs of sessions/kubeconfig are made from it, so that the
// three cannot disagree.
func DataPlaneSessionPath(namespace, name string) string {
	return DataPlanePathPrefix + namespace + "/" + name
}

// ProxyEndpoint is the API path of a session's proxy subresource, as
// status.endpoint shows it; the path on the target follows it.
func ProxyEndpoint(namespace, name string) string {
	return "/apis/" + GroupName + "/" + SchemeGroupVersion.Version + "/namespaces/" + namespace + "/sessions/" + name + "/proxy"
}

// The custom verbs on sessions that RBAC rules grant beside the standard ones.
const (
	// VerbAssign allows naming another owner than oneself.
	VerbAssign = "assign"
	// VerbAssignGroups allows giving an assigned owner groups the assigner
	// is not in, or system: groups. Without it an assigner vouches only for
	// groups of their own: RBAC grants targets to groups.
	VerbAssignGroups = "assign-groups"
	// VerbRevoke allows changing or deleting a session someone else owns.
	VerbRevoke = "revoke"
	// VerbApprove allows approving or denying sessions through
	// sessions/approval.
	VerbApprove = "approve"
	// VerbExtend allows moving a session's expiry later through
	// sessions/extension.
	VerbExtend = "extend"
	// VerbModerate allows moderating the sessions whose access level
	// requires a moderator: following their interactive streams as the
	// moderator they wait for (sessions/recordings with ?moderate=true),
	// and ending them (sessions/moderation). Never one's own.
	VerbModerate = "moderate"
)

// ModerateParameter is the query parameter of a follow of a stream
// (sessions/<name>/recordings/streams/<id>?follow=true) that follows it as
// its moderator.
const ModerateParameter = "moderate"

// The virtual resources of clustergate.dev that name targets in
// authorization: listed in discovery, never served. A session's access
// level is a verb on them (AccessLevelAdmin, AccessLevelViewer or another
// of --session-access-groups), in the session's namespace; a session
// scoped to namespaces of its target may instead hold it on the name
// "<target>/<namespace>" for each of them.
const (
	// ResourceShoots are Gardener Shoots of the server's project, by name.
	ResourceShoots = "shoots"
	// ResourceClusters are cluster targets, by the name of their kubeconfig
	// Secret.
	ResourceClusters = "clusters"
)

// The access levels the server mints credentials for: Gardener's admin and
// viewer groups on a shoot, and the certificate's group on a cluster.
const (
	AccessLevelAdmin  = "admin"
	AccessLevelViewer = "viewer"
)

// The identity a session has on its target, as the target's audit log
// shows it: a client certificate for user SessionUserPrefix+<owner>, in the
// access level's group and in group SessionGroupPrefix+<namespace>/<name>.
const (
	SessionUserPrefix  = "clustergate:session:"
	SessionGroupPrefix = "clustergate:session-name:"
)

// LabelClusterTarget is the label that, set to "true", marks a Secret in the
// server's namespace as the kubeconfig of a cluster target. The server uses no other
// Secret as a target, and never writes this label itself: the Secrets it
// writes hold credentials it minted, which must never lead to a target.
const LabelClusterTarget = "clustergate.dev/cluster-target"
