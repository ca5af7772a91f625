// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
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
	paths := []path{{"kube-apiserver → clustergate", nil}, {"clustergate alone", nil}, {"data plane", nil}, {"direct", nil}}
	for i, cfg := range []*rest.Config{wholeCfg, aloneCfg, dataPlaneCfg, directCfg} {
		cfg.QPS, cfg.Burst = 5000, 5000
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

// idleStreams holds streams idle watches open through the whole path of a
// short session, measures clustergate's memory for them, and waits for the
// session's expiry to end them all.
func idleStreams(ctx context.Context, cp *localcluster.ControlPlane, client versioned.Interface, gardenCfg *rest.Config, streams int) ([]row, error) {
	short, err := openSession(ctx, client, "expiring", 3*time.Minute, owner)
	if err != nil {
		return nil, err
	}
	// Only the whole path is used here.
	paths, err := clients(ctx, cp, gardenCfg, short, short)
	if err != nil {
		return nil, err
	}
	before := rssKiB(cp)
	ended, err := openWatches(ctx, paths[whole].client, streams)
	if err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)
	after := rssKiB(cp)
	var last time.Time
	for range streams {
		last = <-ended
	}
	return []row{
		{name: fmt.Sprintf("clustergate RSS per idle watch (%d open)", streams),
			cells: [ways]string{fmt.Sprintf("%.0f KiB (%d → %d MiB)", float64(after-before)/float64(streams), before/1024, after/1024)}},
		{name: fmt.Sprintf("expiresAt → last of %d streams closed", streams),
			cells: [ways]string{last.Sub(short.Status.ExpiresAt.Time).Round(time.Millisecond).String()}},
	}, nil
}

// openWatches opens n watches through c; each sends the moment it ended.
func openWatches(ctx context.Context, c kubernetes.Interface, n int) (<-chan time.Time, error) {
	ended := make(chan time.Time, n)
	for range n {
		w, err := c.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=none"})
		if err != nil {
			return nil, err
		}
		go func() {
			for range w.ResultChan() {
			}
			ended <- time.Now()
		}()
	}
	return ended, nil
}

// rssKiB is clustergate's resident memory; 0, reported, when unreadable.
func rssKiB(cp *localcluster.ControlPlane) int {
	kib, err := cp.RSSKiB("clustergate")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	return kib
}
