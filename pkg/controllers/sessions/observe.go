// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// target is a cluster target or a Shoot as the server reaches it to have a
// session's certificate signed.
type target struct {
	kube   kubernetes.Interface
	server string
	ca     []byte
}

// observe gathers a session's credentials, CSR and policy. The target (and
// for a Shoot, Gardener) is contacted only while credentials are being
// minted, renewed or cleaned up.
func (c *Controller) observe(ctx context.Context, s *v1alpha1.Session) (Observed, *target, error) {
	o := Observed{Session: s, Now: c.clock.Now()}
	lock, err := c.lockOf(s, o.Now)
	if err != nil {
		return o, nil, err
	}
	o.Lock = lock
	secret, err := c.secrets.Secrets(c.opts.Namespace).Get(credentials.SecretName(s.UID))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, nil, err
	default:
		o.Credentials = secret
	}

	var t *target
	minting := o.Credentials == nil || len(o.Credentials.Data[credentials.KeyKubeconfig]) == 0
	if minting || renewalDue(o) || s.DeletionTimestamp != nil {
		switch {
		case s.Spec.Target.Shoot != nil && c.gardener == nil:
			if minting {
				o.Target = &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: "the server has no Gardener project (--gardener-project)"}
			}
		case s.Spec.Target.Shoot != nil:
			t, o.Target = c.reachShoot(ctx, s)
		default:
			t, o.Target = c.reachTarget(ctx, s)
		}
		if t != nil {
			csr, err := t.kube.CertificatesV1().CertificateSigningRequests().Get(ctx, credentials.CSRName(s.UID), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				o.Target = targetProblem(err)
			default:
				o.CSR = csr
			}
		}
		if o.Target != nil && s.DeletionTimestamp != nil {
			// A target that is gone or unreachable cannot hold up the
			// deletion: its CSR expires there on its own.
			c.recorder.Eventf(s, nil, corev1.EventTypeWarning, o.Target.Reason, "Cleanup", "CSR %s left on the target: %s", credentials.CSRName(s.UID), o.Target.Message)
		}
	}
	if f, ok := c.gardenerFailures.Get(s.UID); ok && s.Spec.Target.Shoot != nil {
		o.GardenerFailure = &f
	}

	o.Policy, err = c.observePolicy(s)
	return o, t, err
}

func (c *Controller) observePolicy(s *v1alpha1.Session) (PolicyState, error) {
	if c.policies == nil {
		return PolicyState{Disabled: true}, nil
	}
	p, served, err := c.policies.get(PolicyName(s))
	switch {
	case err != nil:
		return PolicyState{}, err
	case !served:
		return PolicyState{APIAbsent: true}, nil
	}
	return observePolicy(p, s, c.opts.IstioPolicy), nil
}
