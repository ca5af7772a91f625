// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestKubeconfig: a session's kubeconfig points at the data plane when the
// server has one and its issuers name the owner, at the aggregated proxy
// otherwise, with the CA of the one it points at and never a credential;
// the exec plugin goes where it fetches the right credential.
func TestKubeconfig(t *testing.T) {
	withDataPlane := KubeconfigOptions{ExternalURL: "https://cp.example", CAData: []byte("cp-ca"),
		DataPlaneURL: "https://sessions.example:8443", DataPlaneCAData: []byte("dp-ca"), DataPlaneUserPrefixes: []string{"dataplane:"},
		ExecCommand: "kubelogin", ExecArgs: []string{"get-token"}}
	const (
		aggregated = "https://cp.example/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix-etcd/proxy"
		dataPlane  = "https://sessions.example:8443/sessions/sre/fix-etcd"
	)
	tests := []struct {
		name       string
		owner      string
		cfg        KubeconfigOptions
		wantServer string
		wantCA     string
		wantExec   bool
	}{
		{name: "aggregated", owner: "alice", cfg: KubeconfigOptions{ExternalURL: "https://cp.example/", CAData: []byte("cp-ca")},
			wantServer: aggregated, wantCA: "cp-ca"},
		{name: "aggregated with an exec plugin", owner: "alice", cfg: KubeconfigOptions{ExternalURL: "https://cp.example/", CAData: []byte("cp-ca"), ExecCommand: "kubelogin"},
			wantServer: aggregated, wantCA: "cp-ca", wantExec: true},
		{name: "a data-plane owner", owner: "dataplane:alice@example.com", cfg: withDataPlane, wantServer: dataPlane, wantCA: "dp-ca", wantExec: true},
		// The data plane's plugin fetches a data-plane token: no use to a
		// garden user, who completes the kubeconfig with their own.
		{name: "a garden owner beside a data plane", owner: "alice", cfg: withDataPlane, wantServer: aggregated, wantCA: "cp-ca"},
		{name: "issuers that share the garden's names", owner: "alice", cfg: func() KubeconfigOptions {
			c := withDataPlane
			c.DataPlaneUserPrefixes = []string{""}
			return c
		}(), wantServer: dataPlane, wantCA: "dp-ca", wantExec: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "sre", Name: "fix-etcd"}}
			s.Spec.Owner.Username = tt.owner
			data, err := Kubeconfig(s, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
			if cluster.Server != tt.wantServer || string(cluster.CertificateAuthorityData) != tt.wantCA {
				t.Errorf("cluster = %s with CA %q, want %s with CA %q", cluster.Server, cluster.CertificateAuthorityData, tt.wantServer, tt.wantCA)
			}
			user := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
			if user.Token != "" || len(user.ClientKeyData) > 0 || user.Password != "" {
				t.Errorf("the kubeconfig carries a credential: %+v", user)
			}
			if tt.wantExec != (user.Exec != nil && user.Exec.Command == tt.cfg.ExecCommand) {
				t.Errorf("exec plugin = %+v, want one: %v", user.Exec, tt.wantExec)
			}
		})
	}
}

// TestKubeconfigNamespace: the kubeconfig of a scoped session starts in its
// first namespace, so that kubectl get pods lands in scope; an unscoped
// session's leaves kubectl's default.
func TestKubeconfigNamespace(t *testing.T) {
	tests := []struct {
		name  string
		scope *clustergate.SessionScope
		want  string
	}{
		{name: "unscoped"},
		{name: "scoped", scope: &clustergate.SessionScope{Namespaces: []string{"shop", "shop-db"}}, want: "shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "sre", Name: "fix-etcd"}, Spec: clustergate.SessionSpec{Scope: tt.scope}}
			data, err := Kubeconfig(s, KubeconfigOptions{ExternalURL: "https://cp.example"})
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := kc.Contexts[kc.CurrentContext].Namespace; got != tt.want {
				t.Errorf("context namespace = %q, want %q", got, tt.want)
			}
		})
	}
}
