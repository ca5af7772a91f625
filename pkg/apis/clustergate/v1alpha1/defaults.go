// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultSignerName is the CSR signer of a cluster target that names none.
const DefaultSignerName = "kubernetes.io/kube-apiserver-client"

// DefaultKubeconfigSecretKey is the Secret data key a kubeconfig is written to
// when the spec names none, as in Kyma's GardenerCluster.
const DefaultKubeconfigSecretKey = "config"

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_ClusterTarget defaults the CSR signer.
func SetDefaults_ClusterTarget(obj *ClusterTarget) {
	if obj.SignerName == "" {
		obj.SignerName = DefaultSignerName
	}
}

// SetDefaults_GardenerClusterKubeconfig defaults the Secret's key and
// namespace. The namespace is defaulted here only when the body names the
// object's namespace; the registry strategy covers bodies without one.
func SetDefaults_GardenerClusterKubeconfig(obj *GardenerClusterKubeconfig) {
	secret := &obj.Spec.Kubeconfig.Secret
	if secret.Key == "" {
		secret.Key = DefaultKubeconfigSecretKey
	}
	if secret.Namespace == "" {
		secret.Namespace = obj.Namespace
	}
}

// SetDefaults_SessionApprovers defaults the count of approvers to one.
func SetDefaults_SessionApprovers(obj *SessionApprovers) {
	if obj.Count == 0 {
		obj.Count = 1
	}
}
