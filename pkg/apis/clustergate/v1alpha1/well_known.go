package v1alpha1

// What users and their tools see on the objects the server keeps: condition
// reasons, finalizers, and the labels and annotations of the Secrets of
// GardenerClusterKubeconfigs. They are part of the API: alerts, scripts and
// Kyma's consumers match on them.

// Finalizers the server's controllers put on their objects.
const (
	// SessionFinalizer holds a deleted Session until its credentials, CSR
	// and policy are gone.
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
