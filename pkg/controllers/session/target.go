package session

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// isClusterTarget says whether the server may use a Secret as the
// kubeconfig of a cluster target: it carries the mark, and it is none of the
// Secrets the server writes, a session's credentials or a kept Gardener
// kubeconfig (or Kyma's, which it adopts). Those never get the mark from
// the server, and do not count even when someone else added it: a session
// must never reach a target with another session's or Gardener's
// credentials.
func isClusterTarget(s *corev1.Secret) bool {
	_, minted := s.Labels[credentials.LabelSessionName]
	_, kept := s.Labels[v1alpha1.LabelManagedBy]
	return s.Labels[credentials.LabelClusterTarget] == "true" && !minted && !kept
}
