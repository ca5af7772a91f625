// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestWriteKubeconfig fills an empty user with the caller's credentials only
// for the session's proxy on the caller's own API server.
func TestWriteKubeconfig(t *testing.T) {
	a := newFakeAPI(t)
	proxy := a.URL + "/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy"
	dataPlane := "https://dp.example.com/sessions/demo/fix"
	exec := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "kubectl", Args: []string{"oidc-login", "get-token"},
		InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
	}}
	tests := []struct {
		name    string
		server  string
		user    *clientcmdapi.AuthInfo
		want    *clientcmdapi.AuthInfo
		wantErr string
	}{
		{name: "aggregated proxy on the caller's API server", server: proxy, user: &clientcmdapi.AuthInfo{}, want: a.caller},
		{name: "aggregated proxy with exec plugin", server: proxy, user: exec, want: exec},
		{name: "data plane with exec plugin", server: dataPlane, user: exec, want: exec},
		{name: "data plane without exec plugin", server: dataPlane, user: &clientcmdapi.AuthInfo{}, wantErr: "--kubeconfig-exec-command"},
		{name: "aggregated proxy on another API server", server: "https://api.example.com/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy",
			user: &clientcmdapi.AuthInfo{}, wantErr: "not through the API server of your kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.serve(t, tt.server, tt.user)
			dir := t.TempDir()
			path := filepath.Join(dir, "fix.kubeconfig")
			err := a.g.writeKubeconfig(context.Background(), &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: "demo"}}, path)
			if tt.wantErr != "" {
				a.refused(t, err, tt.wantErr, dir)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ctxt := got.Contexts[got.CurrentContext]
			if server := got.Clusters[ctxt.Cluster].Server; server != tt.server {
				t.Errorf("server = %q, want %q", server, tt.server)
			}
			if diff := cmp.Diff(tt.want, got.AuthInfos[ctxt.AuthInfo],
				cmpopts.IgnoreFields(clientcmdapi.AuthInfo{}, "LocationOfOrigin"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteKubeconfigFile replaces the file with one of mode 0600 and never
// writes through a symbolic link.
func TestWriteKubeconfigFile(t *testing.T) {
	a := newFakeAPI(t)
	a.serve(t, a.URL+"/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy", &clientcmdapi.AuthInfo{})
	tests := []struct {
		name string
		// prepare puts what is already there at path, in dir.
		prepare func(t *testing.T, dir, path string)
		wantErr string
	}{
		{name: "no file", prepare: func(*testing.T, string, string) {}},
		{name: "a file of mode 0644", prepare: func(t *testing.T, _, path string) {
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
				t.Fatal(err)
			}
		}},
		{name: "a symbolic link to a file", wantErr: "symbolic link", prepare: func(t *testing.T, dir, path string) {
			if err := os.WriteFile(filepath.Join(dir, "target"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, "target"), path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a directory", wantErr: "not a regular file", prepare: func(t *testing.T, _, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a dangling symbolic link", wantErr: "symbolic link", prepare: func(t *testing.T, dir, path string) {
			if err := os.Symlink(filepath.Join(dir, "target"), path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "fix.kubeconfig")
			tt.prepare(t, dir, path)
			before := dirContents(t, dir)
			err := a.g.writeKubeconfig(context.Background(), &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: "demo"}}, path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want one saying %q", err, tt.wantErr)
				}
				if diff := cmp.Diff(before, dirContents(t, dir)); diff != "" {
					t.Errorf("directory changed (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"fix.kubeconfig": "-rw-------"}
			if diff := cmp.Diff(want, dirModes(t, dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			got, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if user := got.AuthInfos[got.Contexts[got.CurrentContext].AuthInfo]; user.Token != a.caller.Token {
				t.Errorf("user = %+v, want the caller's", user)
			}
		})
	}
}

// TestOwnProxy compares a session kubeconfig's server with the proxy URL on
// the caller's API server as URLs, not as strings.
func TestOwnProxy(t *testing.T) {
	proxy := &url.URL{Scheme: "https", Host: "api.example.com", Path: "/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy"}
	tests := []struct {
		server  string
		wantErr string
	}{
		{server: "https://api.example.com/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy"},
		{server: "https://API.Example.COM:443/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy"},
		{server: "HTTPS://api.example.com/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy/"},
		{server: "https://api.example.com:6443/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy", wantErr: "not through the API server"},
		{server: "http://api.example.com/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy", wantErr: "not through the API server"},
		{server: "https://api.example.com.evil.test/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/proxy", wantErr: "not through the API server"},
		{server: "https://api.example.com/apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/other/proxy", wantErr: "--kubeconfig-exec-command"},
		{server: "https://api.example.com/sessions/demo/fix", wantErr: "--kubeconfig-exec-command"},
		{server: "https://dp.example.com/sessions/demo/fix", wantErr: "--kubeconfig-exec-command"},
		{server: "https://api.example.com:bad/", wantErr: "no valid server"},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			err := ownProxy(tt.server, proxy)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("ownProxy = %v, want error %q", err, tt.wantErr)
			}
		})
	}
}
