// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestShutdownDelay: --shutdown-delay-duration reaches the generic server,
// which keeps serving that long after SIGTERM with /readyz failing (the
// Deployment's rollout relies on it to lose no request).
func TestShutdownDelay(t *testing.T) {
	if got := completedConfig(t, t.TempDir()).GenericConfig.ShutdownDelayDuration; got != 0 {
		t.Errorf("default shutdown delay %v, want 0", got)
	}
	if got := completedConfig(t, t.TempDir(), "--shutdown-delay-duration=10s").GenericConfig.ShutdownDelayDuration; got != 10*time.Second {
		t.Errorf("shutdown delay %v, want 10s", got)
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
	free, err := embeddedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	o := parsedOptions(t, append([]string{"--data-dir=" + dir, "--bind-address=127.0.0.1", "--secure-port=" + free[strings.LastIndex(free, ":")+1:],
		"--etcd-servers=http://127.0.0.1:1"}, flags...)...)
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

// parsedOptions returns the options with args parsed, in the sections the
// command adds its flags from.
func parsedOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, section := range o.Flags().FlagSets {
		fs.AddFlagSet(section)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestValidate: flags that cannot work together, the data plane's and the
// Istio layer's above all, are refused before the server starts.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	config := func(prefix string) string { return authenticationConfig(t, dir, prefix) }
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{name: "no HTTPS listener", flags: []string{"--secure-port=0"}, want: "--secure-port must be a port between 1 and 65535"},
		{name: "Istio policies without the data plane's issuers", flags: []string{"--istio-namespace=clustergate-data-plane"},
			want: "--istio-namespace needs --data-plane-authentication-config"},
		{name: "Istio policies on a port that is none", flags: []string{"--istio-namespace=clustergate-data-plane",
			"--data-plane-authentication-config=" + config("dataplane:"), "--istio-gateway-port=0"}, want: "--istio-gateway-port must be a port"},
		{name: "Istio policies on the server's own port", flags: []string{"--istio-namespace=clustergate-data-plane",
			"--data-plane-authentication-config=" + config("dataplane:"), "--secure-port=8443", "--istio-gateway-port=8443"}, want: "is a port the server listens on"},
		{name: "data-plane names without a prefix", flags: []string{"--data-plane-address=127.0.0.1:0", "--data-plane-authentication-config=" + config("")},
			want: "claimMappings.username.prefix must not be empty"},
		{name: "the garden's own issuer", flags: []string{"--data-plane-address=127.0.0.1:0", "--data-plane-authentication-config=" + config(""),
			"--data-plane-shared-garden-identities"}},
		{name: "a data-plane URL without an exec plugin", flags: []string{"--data-plane-external-url=https://sessions.example.com"},
			want: "--data-plane-external-url needs --kubeconfig-exec-command"},
		{name: "a data-plane URL without the issuers", flags: []string{"--data-plane-external-url=https://sessions.example.com", "--kubeconfig-exec-command=kubelogin"},
			want: "--data-plane-external-url needs --data-plane-authentication-config"},
		{name: "a data-plane URL with an exec plugin", flags: []string{"--data-plane-external-url=https://sessions.example.com", "--kubeconfig-exec-command=kubelogin",
			"--data-plane-authentication-config=" + config("dataplane:")}},
		{name: "Istio policies for the shipped layout", flags: []string{"--istio-namespace=clustergate-data-plane",
			"--data-plane-authentication-config=" + config("dataplane:")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parsedOptions(t, append([]string{"--etcd-servers=http://127.0.0.1:1"}, tt.flags...)...).Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestValidateRecordingDir: a recording directory that would hold the
// server's own data, or its manifest keys, is refused at start, and an S3
// store needs the keys every replica shares.
func TestValidateRecordingDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{name: "the default, recordings/ in --data-dir"},
		{name: "a directory of its own", flags: []string{"--recording-dir=" + filepath.Join(dir, "recordings")}},
		{name: "--data-dir itself", flags: []string{"--recording-dir=" + data}, want: "is or contains --data-dir"},
		{name: "--data-dir with a trailing slash", flags: []string{"--recording-dir=" + data + "/"}, want: "is or contains --data-dir"},
		{name: "--data-dir through a symbolic link", flags: []string{"--recording-dir=" + filepath.Join(dir, "link")}, want: "is or contains --data-dir"},
		{name: "a directory that contains --data-dir", flags: []string{"--recording-dir=" + dir}, want: "is or contains --data-dir"},
		{name: "the embedded etcd's directory", flags: []string{"--recording-dir=" + filepath.Join(data, "etcd")}, want: "holds the embedded etcd's directory"},
		{name: "inside the embedded etcd's directory", flags: []string{"--recording-dir=" + filepath.Join(dir, "link", "etcd", "member")},
			want: "holds the embedded etcd's directory"},
		{name: "the manifest key inside", flags: []string{"--recording-dir=" + filepath.Join(dir, "recordings"),
			"--recording-manifest-key-file=" + filepath.Join(dir, "recordings", "keys")}, want: "holds the manifest key"},
		{name: "S3 without manifest keys", flags: []string{"--recording-s3-endpoint=http://127.0.0.1:9000", "--recording-s3-bucket=b"},
			want: "--recording-manifest-key-file is required with --recording-s3-endpoint"},
		{name: "S3 with manifest keys", flags: []string{"--recording-s3-endpoint=http://127.0.0.1:9000", "--recording-s3-bucket=b",
			"--recording-manifest-key-file=" + filepath.Join(dir, "keys")}},
		{name: "off", flags: []string{"--recording=off", "--recording-dir=" + data}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parsedOptions(t, append([]string{"--etcd-servers=http://127.0.0.1:1", "--data-dir=" + data}, tt.flags...)...)
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestPolicyIssuers: the sessions' policies match the issuer and claim the
// data plane maps owners from.
func TestPolicyIssuers(t *testing.T) {
	file := authenticationConfig(t, t.TempDir(), "dataplane:")
	cfg := completedConfig(t, t.TempDir(), "--istio-namespace=clustergate-data-plane", "--data-plane-authentication-config="+file)
	// A type of the test's own with the fields of the controller's: the
	// command's tests import none of the server's parts.
	type issuer struct{ URL, UsernameClaim, UsernamePrefix string }
	var got []issuer
	for _, i := range cfg.ExtraConfig.Controllers.Sessions.IstioPolicy.Issuers {
		got = append(got, issuer(i))
	}
	want := []issuer{{URL: "https://login.example.com", UsernameClaim: "email", UsernamePrefix: "dataplane:"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy issuers (-want +got):\n%s", diff)
	}
}

// authenticationConfig writes, in dir, a data-plane AuthenticationConfiguration
// of one issuer that maps the e-mail claim with prefix to user names.
func authenticationConfig(t *testing.T, dir, prefix string) string {
	t.Helper()
	file := filepath.Join(dir, "authn-"+prefix+".yaml")
	content := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://login.example.com
    audiences: [clustergate]
  claimMappings:
    username: {claim: email, prefix: "` + prefix + `"}
`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
