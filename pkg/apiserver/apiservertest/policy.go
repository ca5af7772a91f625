// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apiservertest shows tests above the server what a server
// configuration makes the server's parts do, so that the command's tests
// check the effect of its flags without importing the parts.
package apiservertest

import (
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
)

// AuthorizationPolicy is the AuthorizationPolicy the Session controller
// keeps for s under cfg: its name, namespace and spec, which Istio
// evaluates, without the labels that mark it as the controller's.
func AuthorizationPolicy(cfg *apiserver.Config, s *v1alpha1.Session) *istiosecurityv1.AuthorizationPolicy {
	policy := cfg.ExtraConfig.Controllers.Sessions.IstioPolicy
	p := &istiosecurityv1.AuthorizationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: sessions.PolicyName(s), Namespace: policy.Namespace},
	}
	sessions.DesiredPolicy(s, policy).DeepCopyInto(&p.Spec)
	return p
}
