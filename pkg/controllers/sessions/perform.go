// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	istioapplyv1 "istio.io/client-go/pkg/applyconfiguration/security/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
)

func (c *Controller) perform(ctx context.Context, o Observed, t *target, a Action) error {
	s := o.Session
	sessions := c.client.ClustergateV1alpha1().Sessions(s.Namespace)
	secrets := c.kube.CoreV1().Secrets(c.opts.Namespace)
	update := metav1.UpdateOptions{FieldManager: FieldManager}
	switch a.Type {
	case None:
		return nil
	case DeleteSession:
		uid := s.UID
		err := sessions.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil {
			c.recorder.Eventf(s, nil, corev1.EventTypeNormal, a.Reason, "Delete", "%s%s", a.Message, forReason(s))
		}
		return controllerutil.IgnoreNotFound(err)
	case AddFinalizer:
		updated := s.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, v1alpha1.SessionFinalizer)
		_, err := sessions.Update(ctx, updated, update)
		return err
	case RemoveFinalizer:
		c.gardenerFailures.Forget(s.UID)
		c.bindingFailures.Forget(s.UID)
		updated := s.DeepCopy()
		updated.Finalizers = slices.DeleteFunc(slices.Clone(updated.Finalizers), func(f string) bool { return f == v1alpha1.SessionFinalizer })
		_, err := sessions.Update(ctx, updated, update)
		return controllerutil.IgnoreNotFound(err)
	case CreatePrivateKey:
		key, err := credentials.NewPrivateKey()
		if err != nil {
			return err
		}
		if o.Credentials == nil {
			_, err = secrets.Create(ctx, credentials.NewSecret(c.opts.Namespace, s, map[string][]byte{credentials.KeyPrivateKey: key}), metav1.CreateOptions{FieldManager: FieldManager})
			return err
		}
		// A renewal's key joins the kubeconfig in use.
		updated := o.Credentials.DeepCopy()
		if updated.Data == nil {
			updated.Data = map[string][]byte{}
		}
		updated.Data[credentials.KeyPrivateKey] = key
		_, err = secrets.Update(ctx, updated, update)
		return err
	case CreateCSR:
		return c.createCSR(ctx, o, t)
	case ApproveCSR:
		csr := o.CSR.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ClustergateSession",
			Message: fmt.Sprintf("approved by clustergate for session %s/%s of %s", s.Namespace, s.Name, s.Spec.Owner.Username),
		})
		_, err := t.kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, update)
		return err
	case WriteCertificate:
		kubeconfig, err := credentials.ClientKubeconfig(t.server, t.ca, o.CSR.Status.Certificate, o.Credentials.Data[credentials.KeyPrivateKey])
		if err != nil {
			return err
		}
		renewed := len(o.Credentials.Data[credentials.KeyKubeconfig]) > 0
		_, notAfter := credentials.Validity(kubeconfig)
		updated := o.Credentials.DeepCopy()
		updated.Data = map[string][]byte{credentials.KeyKubeconfig: kubeconfig}
		_, err = secrets.Update(ctx, updated, update)
		if err == nil {
			issued := pick(renewed, "renewed", "issued")
			c.recorder.Eventf(s, nil, corev1.EventTypeNormal, v1alpha1.SessionReasonMinted, "MintCredentials", "Client certificate %s by %s, valid until %s%s",
				issued, o.CSR.Spec.SignerName, notAfter.UTC().Format(time.RFC3339), forReason(s))
		}
		return err
	case ApplyPolicy:
		policy := istioapplyv1.AuthorizationPolicy(PolicyName(s), c.opts.IstioPolicy.Namespace).
			WithLabels(credentials.Labels(s.Namespace, s.Name)).WithSpec(*DesiredPolicy(s, c.opts.IstioPolicy))
		_, err := c.istio.SecurityV1().AuthorizationPolicies(c.opts.IstioPolicy.Namespace).Apply(ctx, policy,
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	case UpdateStatus:
		err := c.applyStatus(ctx, s, a)
		if err == nil {
			c.recordApproval(s, a.Conditions)
			c.recordScope(s, a.Conditions)
			if a.Reason != "" {
				action := a.EventAction
				if action == "" {
					action = "End"
				}
				c.recorder.Eventf(s, nil, corev1.EventTypeNormal, a.Reason, action, "%s%s", a.Message, forReason(s))
			}
		}
		return err
	case DeleteCredentials:
		return controllerutil.IgnoreNotFound(secrets.Delete(ctx, o.Credentials.Name, metav1.DeleteOptions{}))
	case DeleteCSR:
		return controllerutil.IgnoreNotFound(t.kube.CertificatesV1().CertificateSigningRequests().Delete(ctx, o.CSR.Name, metav1.DeleteOptions{}))
	case ApplyBinding:
		return c.applyBinding(ctx, o, t, a.Binding.Namespace)
	case DeleteBinding:
		return controllerutil.IgnoreNotFound(t.kube.RbacV1().RoleBindings(a.Binding.Namespace).Delete(ctx, a.Binding.Name, metav1.DeleteOptions{}))
	case DeletePolicy:
		return controllerutil.IgnoreNotFound(c.istio.SecurityV1().AuthorizationPolicies(c.opts.IstioPolicy.Namespace).Delete(ctx, PolicyName(s), metav1.DeleteOptions{}))
	}
	return fmt.Errorf("unknown action %q", a.Type)
}

func (c *Controller) createCSR(ctx context.Context, o Observed, t *target) error {
	s := o.Session
	request, err := credentials.CertificateRequest(o.Credentials.Data[credentials.KeyPrivateKey], CommonName(s), Groups(s, *o.Level))
	if err != nil {
		return err
	}
	// As long as the session has left (a renewal's certificate lasts until
	// its possibly extended expiry), at least the API's minimum.
	remaining := s.Spec.TTL.Duration
	if s.Status.ExpiresAt != nil {
		remaining = s.Status.ExpiresAt.Sub(o.Now)
	}
	seconds := int32(math.Ceil(max(remaining, gardener.MinExpiration).Seconds()))
	_, err = t.kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: credentials.CSRName(s.UID), Labels: credentials.Labels(s.Namespace, s.Name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        signerName(s),
			ExpirationSeconds: &seconds,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// applyBinding applies the session's RoleBinding in a namespace. A refusal
// (a namespace deleted since it was looked at, a server not allowed to
// bind the role) is remembered as the session's binding failure rather
// than retried at once: the next pass reports it in ScopeReady and tries
// again after a backoff.
func (c *Controller) applyBinding(ctx context.Context, o Observed, t *target, namespace string) error {
	s := o.Session
	_, err := t.kube.RbacV1().RoleBindings(namespace).Apply(ctx, desiredBinding(s, o.Level.NamespacedClusterRole, namespace),
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err == nil {
		c.bindingFailures.Forget(s.UID)
		return nil
	}
	problem := targetProblem(err)
	if apierrors.IsNotFound(err) {
		problem.Reason = v1alpha1.SessionReasonNamespaceNotFound
	}
	c.bindingFailures.Record(s.UID, problem.Reason, fmt.Sprintf("binding ClusterRole %s in namespace %s: %s",
		o.Level.NamespacedClusterRole, namespace, problem.Message), c.clock.Now())
	return nil
}

// recordScope records an event when a status write changes a scoped
// session's ScopeReady condition: a warning that says what holds its
// RoleBindings up, or that they are all made.
func (c *Controller) recordScope(s *v1alpha1.Session, written []metav1.Condition) {
	now := meta.FindStatusCondition(written, v1alpha1.SessionConditionScopeReady)
	if now == nil || now.Reason == v1alpha1.SessionReasonBinding {
		return
	}
	if was := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionScopeReady); was != nil && was.Reason == now.Reason && was.Message == now.Message {
		return
	}
	kind := corev1.EventTypeWarning
	if now.Status == metav1.ConditionTrue || now.Reason == v1alpha1.SessionReasonIdle {
		kind = corev1.EventTypeNormal
	}
	c.recorder.Eventf(s, nil, kind, now.Reason, "Bind", "%s", now.Message)
}

// applyStatus writes conditions and backend URL onto the observed
// session's status. An update of the cached copy, not server-side apply:
// apply's merge cost more processor time per write than the rest of the
// write together (make bench-api), and the update's resourceVersion
// keeps what others wrote meanwhile (a conflict retries on fresh state).
func (c *Controller) applyStatus(ctx context.Context, s *v1alpha1.Session, a Action) error {
	updated := s.DeepCopy()
	updated.Status.ObservedGeneration = s.Generation
	updated.Status.Conditions = controllerutil.SetConditions(s.Status.Conditions, a.Conditions...)
	updated.Status.BackendURL = a.BackendURL
	_, err := c.client.ClustergateV1alpha1().Sessions(s.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// signerName is the signer a session's CSR asks for: a cluster target's
// own, and on a Shoot the one of client certificates its kube-apiserver
// trusts, which the Shoot's kube-controller-manager runs.
func signerName(s *v1alpha1.Session) string {
	if s.Spec.Target.Cluster != nil {
		return s.Spec.Target.Cluster.SignerName
	}
	return certificatesv1.KubeAPIServerClientSignerName
}
