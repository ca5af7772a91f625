// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// targetLabels reads the labels of sessions' targets for the
// SessionApprovalPolicies that select targets by label. It reads them
// live, once per created session and only when such a policy could
// govern it: creates are rare, and a label changed a moment ago must count.
type targetLabels struct {
	// gardener reads Shoots; nil without Gardener.
	gardener *gardener.Client
	// secrets reads cluster targets' Secrets in the server's namespace;
	// nil when standalone.
	secrets corev1client.SecretInterface
}

// TargetLabels returns the labels of s's target.
func (l targetLabels) TargetLabels(ctx context.Context, s *clustergate.Session) (map[string]string, error) {
	switch t := s.Spec.Target; {
	case t.Shoot != nil:
		if l.gardener == nil {
			return nil, errors.New("no Gardener is configured (--gardener-kubeconfig) to read Shoots from")
		}
		return l.gardener.ShootLabels(ctx, gardener.Shoot{Project: t.Shoot.Project, Name: t.Shoot.Name})
	case t.Cluster != nil:
		if l.secrets == nil {
			return nil, errors.New("no core cluster is configured (--kubeconfig) to read cluster targets from")
		}
		secret, err := l.secrets.Get(ctx, t.Cluster.KubeconfigSecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading cluster target %q: %w", t.Cluster.KubeconfigSecretRef.Name, err)
		}
		return secret.Labels, nil
	}
	return nil, nil
}
