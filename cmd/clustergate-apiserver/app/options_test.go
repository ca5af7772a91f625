package app

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			t.Setenv("POD_NAMESPACE", "")
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			dir := t.TempDir()
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			free, err := embeddedetcd.FreeLocalURL()
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--data-dir=" + dir, "--bind-address=127.0.0.1", "--secure-port=" + free[strings.LastIndex(free, ":")+1:],
				"--etcd-servers=http://127.0.0.1:1"}, tt.flags...)
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
			defer cfg.GenericConfig.SecureServing.Listener.Close()
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
