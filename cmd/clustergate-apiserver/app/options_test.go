package app

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// TestServingCertificateFollowsNamespace: the self-signed serving
// certificate names the Service the aggregator dials in the server's own
// namespace, whatever --namespace says.
func TestServingCertificateFollowsNamespace(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{name: "default namespace", want: []string{"localhost", "clustergate.clustergate-system.svc", "clustergate.clustergate-system.svc.cluster.local"}},
		{name: "--namespace", flags: []string{"--namespace=platform"},
			want: []string{"localhost", "clustergate.platform.svc", "clustergate.platform.svc.cluster.local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			completedConfig(t, dir, tt.flags...)
			data, err := os.ReadFile(filepath.Join(dir, "certificates", "apiserver.crt"))
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(data)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cert.DNSNames); diff != "" {
				t.Errorf("DNS names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoopbackIsUncompressed: the controllers' watches and writes on the
// server's own API are not gzipped, as kube-apiserver's are not.
func TestLoopbackIsUncompressed(t *testing.T) {
	cfg := completedConfig(t, t.TempDir())
	if !cfg.GenericConfig.LoopbackClientConfig.DisableCompression {
		t.Error("the loopback client asks for compressed answers")
	}
}

// completedConfig builds the server's configuration from flags, with its
// data in dir and no etcd behind it.
func completedConfig(t *testing.T, dir string, flags ...string) *apiserver.Config {
	t.Helper()
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	free, err := embeddedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--data-dir=" + dir, "--bind-address=127.0.0.1", "--secure-port=" + free[strings.LastIndex(free, ":")+1:],
		"--etcd-servers=http://127.0.0.1:1"}, flags...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.GenericConfig.SecureServing.Listener.Close() })
	return cfg
}
