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
	if level, ok := c.opts.Access.Level(s.Spec.AccessLevel.Group); ok {
		o.Level = &level
	}
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
	if minting || renewalDue(o) || s.DeletionTimestamp != nil || scopePending(o) {
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
		if t != nil && o.Target == nil && (Scoped(s) || minting || s.DeletionTimestamp != nil) {
			o.Bindings = c.observeBindings(ctx, t, s, o.Level, o.Now)
		}
		if s.DeletionTimestamp != nil && bindingCleanupWait(o, c.opts.Config) == 0 {
			c.recordLeftovers(o)
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

// recordLeftovers records what a deleted session leaves on a target that
// is gone or could not be reached: that cannot hold up the deletion for
// long. Its CSR expires there on its own; the orphan sweep removes its
// RoleBindings once it reaches the target again.
func (c *Controller) recordLeftovers(o Observed) {
	s := o.Session
	switch {
	case o.Target != nil:
		left := "CSR " + credentials.CSRName(s.UID)
		if Scoped(s) {
			left += " and RoleBindings " + BindingName(s)
		}
		c.recorder.Eventf(s, nil, corev1.EventTypeWarning, o.Target.Reason, "Cleanup", "%s left on the target: %s", left, o.Target.Message)
	case Scoped(s) && o.Bindings.Problem != nil:
		c.recorder.Eventf(s, nil, corev1.EventTypeWarning, o.Bindings.Problem.Reason, "Cleanup", "RoleBindings %s left on the target: %s",
			BindingName(s), o.Bindings.Problem.Message)
	}
}
