// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

// The contract of a session's credentials Secret, in one place: the
// controller writes it, the proxy reads it, and the server's own cache
// watches only Secrets that match Selector.
const (
	// KeyKubeconfig holds the minted kubeconfig.
	KeyKubeconfig = "kubeconfig"
	// KeyPrivateKey holds the private key of a cluster target's CSR until
	// the certificate is issued, the first one or a renewal's (next to the
	// kubeconfig in use).
	KeyPrivateKey = "tls.key"

	// LabelSessionName and LabelSessionNamespace name the session a
	// credentials Secret, CSR or policy belongs to.
	LabelSessionName      = "clustergate.dev/session-name"
	LabelSessionNamespace = "clustergate.dev/session-namespace"
	// LabelManagedBy, set to ManagedBy, marks the objects the server keeps
	// for sessions.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "clustergate"
)

// SecretName is the name of a session's credentials Secret.
func SecretName(uid types.UID) string { return "session-" + string(uid) }

// CSRName is the name of a session's CSR on a cluster target.
func CSRName(uid types.UID) string { return "clustergate-session-" + string(uid) }

// Labels are the labels of the objects the server keeps for the session
// namespace/name: its credentials Secret, CSR and policy.
func Labels(namespace, name string) map[string]string {
	return map[string]string{LabelSessionName: name, LabelSessionNamespace: namespace, LabelManagedBy: ManagedBy}
}

// Selector selects the credentials Secrets of sessions, the only Secrets of
// the server's namespace the server caches.
func Selector() labels.Selector {
	req, _ := labels.NewRequirement(LabelSessionName, selection.Exists, nil)
	return labels.NewSelector().Add(*req)
}

// SessionOf names the session an object made by Labels belongs to.
func SessionOf(obj metav1.Object) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	name, ok := l[LabelSessionName]
	return types.NamespacedName{Namespace: l[LabelSessionNamespace], Name: name}, ok
}

// NewSecret returns the credentials Secret of the session with the given
// namespace, name and UID, in the server's namespace.
func NewSecret(serverNamespace string, session metav1.Object, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: SecretName(session.GetUID()), Namespace: serverNamespace,
			Labels: Labels(session.GetNamespace(), session.GetName()),
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
