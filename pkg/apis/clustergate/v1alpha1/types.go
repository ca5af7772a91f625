package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Session is a time-limited, owner-bound break-glass session to a target
// cluster. Its proxy subresource streams the owner's requests to the target
// with credentials the server minted and never hands out.
type Session struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the creator asked for. It is immutable after create.
	Spec SessionSpec `json:"spec"`
	// Status is what the server observed and decided.
	// +optional
	Status SessionStatus `json:"status,omitempty"`
}

// SessionSpec is what the creator asked for. It is immutable after create.
type SessionSpec struct {
	// TTL is how long the session lasts, counted from its creation, for
	// example "1h". It must lie within the server's --session-min-ttl and
	// --session-max-ttl.
	TTL metav1.Duration `json:"ttl"`
	// Owner is the only user who may use the session's proxy. It is stamped
	// from the creator; naming someone else needs the verb "assign" on sessions.
	// +optional
	Owner SessionOwner `json:"owner,omitempty"`
	// AccessLevel names the group the minted credentials carry on the target.
	AccessLevel AccessLevel `json:"accessLevel"`
	// Target is the cluster the session reaches.
	Target SessionTarget `json:"target"`
}

// SessionOwner identifies the user a session belongs to.
type SessionOwner struct {
	// Username is the owner's authenticated user name.
	Username string `json:"username"`
	// UID is the owner's authenticated user UID, if the authenticator set one.
	// +optional
	UID string `json:"uid,omitempty"`
	// Groups are the owner's groups at the time the session was created.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
}

// AccessLevel is the level of access a session grants on its target.
type AccessLevel struct {
	// Group is one of the server's --session-access-groups, such as "admin"
	// or "viewer".
	Group string `json:"group"`
}

// SessionTarget names the cluster of a session: exactly one member is set.
// +union
type SessionTarget struct {
	// Shoot is a Gardener Shoot in the server's Gardener project.
	// +optional
	Shoot *ShootReference `json:"shoot,omitempty"`
	// Cluster is a cluster reached through a kubeconfig Secret.
	// +optional
	Cluster *ClusterTarget `json:"cluster,omitempty"`
}

// ShootReference names a Gardener Shoot in the server's Gardener project.
type ShootReference struct {
	// Name is the Shoot's name.
	Name string `json:"name"`
}

// ClusterTarget is a cluster whose credentials are minted with a
// certificates.k8s.io/v1 CertificateSigningRequest.
type ClusterTarget struct {
	// KubeconfigSecretRef names a Secret in the server's namespace holding a
	// kubeconfig that may create and approve CSRs on the target.
	KubeconfigSecretRef LocalSecretReference `json:"kubeconfigSecretRef"`
	// SignerName is the CSR signer that issues the session's client
	// certificate. Defaults to kubernetes.io/kube-apiserver-client.
	// +optional
	SignerName string `json:"signerName,omitempty"`
}

// LocalSecretReference names a Secret in a namespace known from context.
type LocalSecretReference struct {
	// Name is the Secret's name.
	Name string `json:"name"`
}

// SessionStatus is what the server observed and decided about a session.
type SessionStatus struct {
	// ExpiresAt is creationTimestamp + ttl. It is written once and never changes.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// Endpoint is the API path of the session's proxy subresource.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// BackendURL is the URL of the target's kube-apiserver.
	// +optional
	BackendURL string `json:"backendURL,omitempty"`
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are CredentialsReady, AuthorizationPolicyReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of a Session.
const (
	// SessionConditionCredentialsReady: the server holds credentials for the target.
	SessionConditionCredentialsReady = "CredentialsReady"
	// SessionConditionAuthorizationPolicyReady: the session's Istio policy is in place.
	SessionConditionAuthorizationPolicyReady = "AuthorizationPolicyReady"
	// SessionConditionReady: the owner may use the session's proxy.
	SessionConditionReady = "Ready"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionList is a list of Sessions.
type SessionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Sessions.
	Items []Session `json:"items"`
}

// +k8s:conversion-gen:explicit-from=net/url.Values
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionProxyOptions is the query of a request to the sessions/proxy subresource.
type SessionProxyOptions struct {
	metav1.TypeMeta `json:",inline"`

	// Path is the path to forward to the target, below the proxy subresource.
	// +optional
	Path string `json:"path,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionKubeconfig is the answer of the sessions/kubeconfig subresource: a
// kubeconfig that reaches the session's proxy and carries no credentials.
type SessionKubeconfig struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Kubeconfig is the kubeconfig file, YAML encoded.
	Kubeconfig []byte `json:"kubeconfig"`
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
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the Shoot and the Secret to keep.
	Spec GardenerClusterKubeconfigSpec `json:"spec"`
	// Status is what the server observed about the kubeconfig.
	// +optional
	Status GardenerClusterKubeconfigStatus `json:"status,omitempty"`
}

// GardenerClusterKubeconfigSpec names the Shoot and the Secret to keep.
type GardenerClusterKubeconfigSpec struct {
	// Shoot is the Gardener Shoot whose kubeconfig is kept.
	Shoot ShootReference `json:"shoot"`
	// Kubeconfig says where the kubeconfig is written.
	Kubeconfig KubeconfigTarget `json:"kubeconfig"`
}

// KubeconfigTarget says where a kubeconfig is written.
type KubeconfigTarget struct {
	// Secret is the Secret and data key that hold the kubeconfig.
	Secret SecretKeyReference `json:"secret"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	// Name is the Secret's name.
	Name string `json:"name"`
	// Namespace is the Secret's namespace. It defaults to, and must equal,
	// the object's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Key is the data key that holds the kubeconfig. Defaults to "config".
	// +optional
	Key string `json:"key,omitempty"`
}

// KubeconfigState is the summary state of a GardenerClusterKubeconfig.
// +enum
type KubeconfigState string

const (
	// KubeconfigStateReady means the Secret holds a valid kubeconfig.
	KubeconfigStateReady KubeconfigState = "Ready"
	// KubeconfigStateError means the last attempt to write the Secret failed.
	KubeconfigStateError KubeconfigState = "Error"
)

// GardenerClusterKubeconfigStatus is what the server observed about the kubeconfig.
type GardenerClusterKubeconfigStatus struct {
	// State is Ready or Error.
	// +optional
	State KubeconfigState `json:"state,omitempty"`
	// LastSyncTime is when the kubeconfig in the Secret was last written.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// ExpirationTime is when the kubeconfig in the Secret expires.
	// +optional
	ExpirationTime *metav1.Time `json:"expirationTime,omitempty"`
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds KubeconfigReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GardenerClusterKubeconfigList is a list of GardenerClusterKubeconfigs.
type GardenerClusterKubeconfigList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the GardenerClusterKubeconfigs.
	Items []GardenerClusterKubeconfig `json:"items"`
}
