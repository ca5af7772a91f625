package storage

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestKubeconfig: a session's kubeconfig points at the data plane when the
// server has one, at the aggregated proxy otherwise, with the CA of the one
// it points at and never a credential.
func TestKubeconfig(t *testing.T) {
	s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "sre", Name: "fix-etcd"}}
	tests := []struct {
		name       string
		cfg        KubeconfigConfig
		wantServer string
		wantCA     string
	}{
		{name: "aggregated", cfg: KubeconfigConfig{ExternalURL: "https://cp.example/", CAData: []byte("cp-ca")},
			wantServer: "https://cp.example/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix-etcd/proxy", wantCA: "cp-ca"},
		{name: "data plane", cfg: KubeconfigConfig{ExternalURL: "https://cp.example", CAData: []byte("cp-ca"),
			DataPlaneURL: "https://sessions.example:8443", DataPlaneCAData: []byte("dp-ca"), ExecCommand: "kubelogin", ExecArgs: []string{"get-token"}},
			wantServer: "https://sessions.example:8443/sessions/sre/fix-etcd", wantCA: "dp-ca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			if (tt.cfg.ExecCommand != "") != (user.Exec != nil && user.Exec.Command == tt.cfg.ExecCommand) {
				t.Errorf("exec plugin = %+v, want %q", user.Exec, tt.cfg.ExecCommand)
			}
		})
	}
}
