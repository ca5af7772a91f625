// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    v1alpha1.SessionTarget
		wantErr bool
	}{
		{in: "shoot/local", want: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}}},
		{in: "cluster/mc-1", want: v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: "mc-1"}}}},
		{in: "local", wantErr: true},
		{in: "shoot/", wantErr: true},
		{in: "shoot/shop/prod", want: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "prod", Project: "shop"}}},
		{in: "shoot//prod", wantErr: true},
		{in: "shoot/shop/", wantErr: true},
		{in: "shoot/a/b/c", wantErr: true},
		{in: "pod/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTarget(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseTarget(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenSession(t *testing.T) {
	o := &openOptions{access: "admin", ttl: time.Hour, reason: "INC-1", owner: "bob"}
	s, err := o.session("shoot/local")
	if err != nil {
		t.Fatal(err)
	}
	if s.GenerateName != "session-" || s.Name != "" || s.Spec.Owner.Username != "bob" || s.Spec.Reason != "INC-1" ||
		s.Spec.AccessLevel.Group != "admin" || s.Spec.TTL.Duration != time.Hour {
		t.Errorf("session = %+v", s)
	}
	o.name = "fix"
	if s, _ := o.session("shoot/local"); s.Name != "fix" || s.GenerateName != "" {
		t.Errorf("with --name: %+v", s.ObjectMeta)
	}
}

func TestDecide(t *testing.T) {
	pending := v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalPending}
	approved := v1alpha1.SessionApproval{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalApproved}
	tests := []struct {
		name      string
		approvals []v1alpha1.SessionApproval
		want      []v1alpha1.SessionApproval
		wantErr   bool
	}{
		{name: "pending opening", approvals: []v1alpha1.SessionApproval{pending},
			want: []v1alpha1.SessionApproval{{Type: v1alpha1.ApprovalOpen, Decision: v1alpha1.ApprovalDenied, Reason: "no"}}},
		{name: "nothing pending", approvals: []v1alpha1.SessionApproval{approved}, want: []v1alpha1.SessionApproval{approved}, wantErr: true},
		{name: "no approvals", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1alpha1.Session{Status: v1alpha1.SessionStatus{Approvals: tt.approvals}}
			if err := decide(s, v1alpha1.ApprovalDenied, "no"); (err != nil) != tt.wantErr {
				t.Fatalf("decide: %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, s.Status.Approvals); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30m": 30 * time.Minute, "1s": time.Second, "0s": 0, "-1m": 0, "soon": 0, "10ms": 0} {
		got, err := parseDuration(in)
		if got != want || (want == 0) != (err != nil) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestDescribeLast(t *testing.T) {
	expires := metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	s := &v1alpha1.Session{Status: v1alpha1.SessionStatus{ExpiresAt: &expires, Approvals: []v1alpha1.SessionApproval{
		{Type: v1alpha1.ApprovalExtend, Duration: &metav1.Duration{Duration: 30 * time.Minute}, Decision: v1alpha1.ApprovalApproved, DecidedBy: "bob"}}}}
	if got, want := describeLast(s), "extension by 30m0s approved by bob; expires at 2026-11-30T11:00:00Z"; got != want {
		t.Errorf("describeLast = %q, want %q", got, want)
	}
}

// TestArguments runs the command with bad arguments: each is refused before
// any server is asked.
func TestArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{args: []string{"open", "shoot/local", "--ttl", "1h"}, want: `required flag(s) "access" not set`},
		{args: []string{"open", "--access", "admin", "--ttl", "1h"}, want: "accepts 1 arg(s)"},
		{args: []string{"open", "pod/x", "--access", "admin", "--ttl", "1h"}, want: "must be shoot/NAME, shoot/PROJECT/NAME or cluster/NAME"},
		{args: []string{"extend", "s", "soon"}, want: "is not a duration"},
		{args: []string{"extend", "s"}, want: "accepts 2 arg(s)"},
		{args: []string{"approve"}, want: "accepts 1 arg(s)"},
		{args: []string{"revoke"}, want: "either one session or --user"},
		{args: []string{"revoke", "s", "--user", "bob"}, want: "either one session or --user"},
		{args: []string{"list", "-o", "table"}, want: `unable to match a printer suitable for the output format "table"`},
		{args: []string{"list", "-o", "custom-columns="}, want: "no custom columns given"},
		{args: []string{"lock", "--target", "pod/x", "--reason", "r"}, want: "must be shoot/NAME, shoot/PROJECT/NAME or cluster/NAME"},
		{args: []string{"lock", "extra", "--user", "u"}, want: "unknown command"},
		{args: []string{"unlock"}, want: "requires at least 1 arg(s)"},
		{args: []string{"locks", "-o", "table"}, want: `unable to match a printer suitable for the output format "table"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
			cmd.SetArgs(append(tt.args, "--kubeconfig", "/nonexistent"))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// fakeAPI is the caller's API server: it answers sessions/fix/kubeconfig in
// demo with served, sessions/fix/recordings/PATH with recorded[PATH], and g
// is a caller whose kubeconfig reaches it as caller.
type fakeAPI struct {
	*httptest.Server
	g        *globals
	caller   *clientcmdapi.AuthInfo
	served   atomic.Pointer[[]byte]
	recorded atomic.Pointer[map[string]string]
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("caller", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &fakeAPI{caller: &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM, Token: "caller-token"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/kubeconfig", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&v1alpha1.SessionKubeconfig{
			TypeMeta:   metav1.TypeMeta{Kind: "SessionKubeconfig", APIVersion: v1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: "demo"},
			Kubeconfig: *a.served.Load(),
		})
	})
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/{namespace}/sessions", a.list)
	recordings := func(w http.ResponseWriter, r *http.Request) {
		data, ok := (*a.recorded.Load())[r.PathValue("path")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(data))
	}
	a.recorded.Store(&map[string]string{})
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/recordings", recordings)
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/recordings/{path...}", recordings)
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/sessions", a.list)
	a.Server = httptest.NewTLSServer(mux)
	t.Cleanup(a.Close)
	garden := clientcmdapi.NewConfig()
	garden.Clusters["garden"] = &clientcmdapi.Cluster{
		Server: a.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw}),
	}
	garden.AuthInfos["alice"] = a.caller
	garden.Contexts["garden"] = &clientcmdapi.Context{Cluster: "garden", AuthInfo: "alice", Namespace: "demo"}
	garden.CurrentContext = "garden"
	path := filepath.Join(t.TempDir(), "garden.kubeconfig")
	if err := clientcmd.WriteToFile(*garden, path); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &path
	a.g = &globals{flags: flags, streams: genericiooptions.NewTestIOStreamsDiscard()}
	return a
}

// serve makes a answer with a kubeconfig of the shape the server hands out:
// server, and user (empty without --kubeconfig-exec-command).
func (a *fakeAPI) serve(t *testing.T, server string, user *clientcmdapi.AuthInfo) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["session-demo-fix"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["session-demo-fix"] = user
	kc.Contexts["session-demo-fix"] = &clientcmdapi.Context{Cluster: "session-demo-fix", AuthInfo: "session-demo-fix"}
	kc.CurrentContext = "session-demo-fix"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	a.served.Store(&data)
}

// refused checks that err says want and that the caller's credentials are
// nowhere: not in the error, and no file at all in dir.
func (a *fakeAPI) refused(t *testing.T, err error, want, dir string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want one saying %q", err, want)
	}
	for _, secret := range []string{a.caller.Token, string(a.caller.ClientKeyData)} {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error %q carries the caller's credentials", err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}

// dirContents is every entry of dir with its mode and, for a symbolic link,
// where it points, for a file its content.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, mode := range dirModes(t, dir) {
		p := filepath.Join(dir, name)
		var what string
		var err error
		switch mode[0] {
		case 'L':
			what, err = os.Readlink(p)
		case '-':
			var data []byte
			data, err = os.ReadFile(p)
			what = string(data)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[name] = mode + " " + what
	}
	return out
}

// dirModes is every entry of dir with its mode, symbolic links not followed.
func dirModes(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.Mode().String()
	}
	return out
}
