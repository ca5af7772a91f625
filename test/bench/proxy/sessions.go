// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// owner is the sessions' owner: a service account of the garden.
const owner = "system:serviceaccount:" + namespace + ":bench"

// dataPlaneOwner is the data plane's name of the same service account: its
// tokens for the data plane's audience are mapped into a space of their own.
const dataPlaneOwner = localcluster.DataPlaneUserPrefix + owner

// openSession opens an admin session of owner to the shoot as a cluster
// target, assigned by the garden admin, and waits until it is Ready.
func openSession(ctx context.Context, client versioned.Interface, name string, ttl time.Duration, owner string) (*v1alpha1.Session, error) {
	_, err := client.ClustergateV1alpha1().Sessions(namespace).Create(ctx, &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL: metav1.Duration{Duration: ttl}, AccessLevel: v1alpha1.AccessLevel{Group: "admin"},
			Owner:  v1alpha1.SessionOwner{Username: owner},
			Target: v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: localcluster.ShootTargetSecret}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	for range 120 {
		s, err := client.ClustergateV1alpha1().Sessions(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
			return s, nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, fmt.Errorf("session %s not Ready", name)
}

// clients returns clients of the session's target through the whole path
// and through clustergate alone as its owner, through the data plane as the
// owner of dp, a session of dataPlaneOwner to the same target, and directly
// with s's own minted credentials.
func clients(ctx context.Context, cp *localcluster.ControlPlane, garden *rest.Config, s, dp *v1alpha1.Session) ([]path, error) {
	kube := kubernetes.NewForConfigOrDie(garden)
	secret, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	directCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[credentials.KeyKubeconfig])
	if err != nil {
		return nil, err
	}
	wholeCfg := rest.AnonymousClientConfig(garden)
	wholeCfg.Host = strings.TrimSuffix(garden.Host, "/") + s.Status.Endpoint
	if wholeCfg.BearerToken, err = ownerToken(ctx, kube, ""); err != nil {
		return nil, err
	}
	aloneCfg := cp.FrontProxyConfig(cp.ClustergateURL+s.Status.Endpoint, owner, "system:serviceaccounts", "system:authenticated")
	dataPlaneCfg := &rest.Config{Host: cp.DataPlaneURL + v1alpha1.DataPlaneSessionPath(namespace, dp.Name) + "/", TLSClientConfig: rest.TLSClientConfig{CAFile: cp.DataPlaneCAFile}}
	if dataPlaneCfg.BearerToken, err = ownerToken(ctx, kube, localcluster.DataPlaneAudience); err != nil {
		return nil, err
	}
	paths := []path{{name: "kube-apiserver → clustergate", profiled: cp.ClustergateURL}, {name: "clustergate alone", profiled: cp.ClustergateURL},
		{name: "data plane", profiled: cp.ClustergateURL}, {name: "direct"}}
	for i, cfg := range []*rest.Config{wholeCfg, aloneCfg, dataPlaneCfg, directCfg} {
		cfg.QPS, cfg.Burst = 5000, 5000
		paths[i].cfg = cfg
		if paths[i].client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// ownerToken is a token of owner's service account for audience, the
// garden's own when empty.
func ownerToken(ctx context.Context, kube kubernetes.Interface, audience string) (string, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	name := owner[strings.LastIndex(owner, ":")+1:]
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}
