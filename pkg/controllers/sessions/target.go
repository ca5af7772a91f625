// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

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
	return s.Labels[v1alpha1.LabelClusterTarget] == "true" && !minted && !kept
}

// TargetSelector selects the Secrets marked as cluster targets: the only
// ones the controller caches of those a session may name.
func TargetSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelClusterTarget: "true"})
}

// sessionsNaming returns the sessions whose cluster target is the given
// Secret. Targets change seldom, so all sessions are looked through rather
// than indexed.
func (c *Controller) sessionsNaming(obj any) []types.NamespacedName {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Namespace != c.opts.Namespace {
		return nil
	}
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []types.NamespacedName
	for _, s := range sessions {
		if t := s.Spec.Target.Cluster; t != nil && t.KubeconfigSecretRef.Name == secret.Name {
			keys = append(keys, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return keys
}

func (c *Controller) reachTarget(ctx context.Context, s *v1alpha1.Session) (*target, *TargetProblem) {
	ref := s.Spec.Target.Cluster.KubeconfigSecretRef.Name
	secret, err := c.targets.Secrets(c.opts.Namespace).Get(ref)
	if apierrors.IsNotFound(err) {
		return nil, c.unmarkedTarget(ctx, s, ref)
	}
	if err != nil {
		return nil, targetProblem(err)
	}
	if !isClusterTarget(secret) {
		return nil, notMarked(c.opts.Namespace, ref)
	}
	return clusterTargetOf(secret)
}

// clusterTargetOf returns a client of the cluster target of a marked
// Secret.
func clusterTargetOf(secret *corev1.Secret) (*target, *TargetProblem) {
	kubeconfig := secret.Data["kubeconfig"]
	if len(kubeconfig) == 0 {
		kubeconfig = secret.Data["value"]
	}
	return newTarget(kubeconfig, "kubeconfig Secret "+secret.Name)
}

// newTarget returns a client of the target of a kubeconfig, refusing one
// that does not verify the target with TLS; what names the kubeconfig in
// the problem.
func newTarget(kubeconfig []byte, what string) (*target, *TargetProblem) {
	server, ca, err := credentials.TargetCluster(kubeconfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetInsecure, Message: fmt.Sprintf("%s: %v", what, err)}
	}
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: err.Error()}
	}
	restConfig.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: err.Error()}
	}
	return &target{kube: kube, server: server, ca: ca}, nil
}

// unmarkedTarget says why a session's target Secret is not among the
// marked ones: missing, or not marked. The core cluster is asked only while
// the session does not already say which: the answer changes only when the
// Secret is marked, and that is an event of the target cache. So a session
// waiting for its target costs nothing, however many there are: a GET per
// waiting session on a timer would grow with them past the controller's
// client limit.
func (c *Controller) unmarkedTarget(ctx context.Context, s *v1alpha1.Session, ref string) *TargetProblem {
	if have := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionCredentialsReady); have != nil &&
		have.Status == metav1.ConditionFalse && isUnmarked(have.Reason) {
		return &TargetProblem{Reason: have.Reason, Message: have.Message}
	}
	_, err := c.kube.CoreV1().Secrets(c.opts.Namespace).Get(ctx, ref, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: fmt.Sprintf(
			"kubeconfig Secret %s/%s not found; a cluster target is a Secret there labelled %s=true", c.opts.Namespace, ref, v1alpha1.LabelClusterTarget)}
	case err != nil:
		return targetProblem(err)
	}
	return notMarked(c.opts.Namespace, ref)
}

// isUnmarked tells whether a target problem lasts until a Secret is marked
// as a cluster target.
func isUnmarked(reason string) bool {
	return reason == v1alpha1.SessionReasonTargetNotFound || reason == v1alpha1.SessionReasonTargetNotMarked
}

func notMarked(namespace, ref string) *TargetProblem {
	return &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotMarked, Message: fmt.Sprintf(
		"Secret %s/%s is not a cluster target: only a Secret labelled %s=true that holds no credentials the server wrote is one",
		namespace, ref, v1alpha1.LabelClusterTarget)}
}

func targetProblem(err error) *TargetProblem {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden, Message: err.Error()}
	}
	return &TargetProblem{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: err.Error()}
}
