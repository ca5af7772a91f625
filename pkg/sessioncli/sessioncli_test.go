// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

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
		{args: []string{"open", "pod/x", "--access", "admin", "--ttl", "1h"}, want: "must be shoot/NAME or cluster/NAME"},
		{args: []string{"extend", "s", "soon"}, want: "is not a duration"},
		{args: []string{"extend", "s"}, want: "accepts 2 arg(s)"},
		{args: []string{"approve"}, want: "accepts 1 arg(s)"},
		{args: []string{"revoke"}, want: "either one session or --user"},
		{args: []string{"revoke", "s", "--user", "bob"}, want: "either one session or --user"},
		{args: []string{"list", "-o", "table"}, want: `unable to match a printer suitable for the output format "table"`},
		{args: []string{"list", "-o", "custom-columns="}, want: "no custom columns given"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
			cmd.SetArgs(append(tt.args, "--kubeconfig", "/nonexistent"))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	forbidden := apierrors.NewForbidden(v1alpha1.Resource("sessions"), "s", errors.New("no"))
	if got := Message(forbidden); got != forbidden.ErrStatus.Message {
		t.Errorf("Message = %q, want the Status message %q", got, forbidden.ErrStatus.Message)
	}
	if got := Message(errors.New("plain")); got != "plain" {
		t.Errorf("Message = %q", got)
	}
}

// fakeAPI is the caller's API server: it answers sessions/fix/kubeconfig in
// demo with served, and g is a caller whose kubeconfig reaches it as caller.
type fakeAPI struct {
	*httptest.Server
	g      *globals
	caller *clientcmdapi.AuthInfo
	served atomic.Pointer[[]byte]
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

// listedSession is a session the fake API server lists, with what the
// server's table shows of it.
type listedSession struct {
	namespace, name, owner, target, group, reason, approval string
}

// listed are the sessions of the fake API server: two in demo, the
// kubeconfig's namespace, and one in sre.
var listed = []listedSession{
	{namespace: "demo", name: "fix", owner: "alice", target: "shoot/local", group: "admin", reason: "INC-4711", approval: "Approved by bob"},
	{namespace: "demo", name: "look", owner: "bob", target: "cluster/mc-1", group: "viewer"},
	{namespace: "sre", name: "audit", owner: "carol", target: "shoot/local", group: "viewer", reason: "audit"},
}

// listedIn are the listed sessions in namespace, of every namespace for "".
func listedIn(namespace string) []listedSession {
	var in []listedSession
	for _, l := range listed {
		if namespace == "" || l.namespace == namespace {
			in = append(in, l)
		}
	}
	return in
}

// session is the Session as the server keeps it, managedFields included.
func (l listedSession) session() (v1alpha1.Session, error) {
	target, err := parseTarget(l.target)
	expires := metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	return v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: l.namespace, Labels: map[string]string{"team": l.namespace},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-session", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: v1alpha1.SessionOwner{Username: l.owner},
			AccessLevel: v1alpha1.AccessLevel{Group: l.group}, Target: target, Reason: l.reason},
		Status: v1alpha1.SessionStatus{ExpiresAt: &expires},
	}, err
}

// list answers a LIST of sessions as the server does: a SessionList whose
// items carry no kind or, asked for it, the server's table: its columns, the
// wide ones of priority 1, and each row's object metadata.
func (a *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	sessions := &v1alpha1.SessionList{
		TypeMeta: metav1.TypeMeta{Kind: "SessionList", APIVersion: v1alpha1.SchemeGroupVersion.String()},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
	}
	table := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name"}, {Name: "Owner", Type: "string"}, {Name: "Target", Type: "string"},
			{Name: "Access", Type: "string"}, {Name: "Expires", Type: "string"}, {Name: "Ready", Type: "string"},
			{Name: "Expires-At", Type: "string", Format: "date-time", Priority: 1},
			{Name: "Approval", Type: "string", Priority: 1}, {Name: "Reason", Type: "string", Priority: 1},
		},
	}
	for _, l := range listedIn(r.PathValue("namespace")) {
		s, err := l.session()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		sessions.Items = append(sessions.Items, s)
		object, err := json.Marshal(&metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: s.ObjectMeta})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []any{l.name, l.owner, l.target, l.group, "59m", "True", s.Status.ExpiresAt.UTC().Format(time.RFC3339), l.approval, l.reason},
			Object: runtime.RawExtension{Raw: object},
		})
	}
	var answer any = sessions
	if strings.Contains(r.Header.Get("Accept"), "as=Table") {
		answer = table
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// TestList lists the sessions of demo, or of every namespace with -A, in
// each output format: the tables as before kubectl's printers, the others
// as kubectl get prints objects.
func TestList(t *testing.T) {
	a := newFakeAPI(t)
	tests := []struct {
		name string
		args []string
		// want is the output. For json, yaml and kyaml: empty, and the
		// output is the sessions of demo, each with its kind, without
		// managedFields.
		want, wantErrOut string
	}{
		{name: "table", want: `NAME   OWNER   TARGET         ACCESS   EXPIRES   READY
fix    alice   shoot/local    admin    59m       True
look   bob     cluster/mc-1   viewer   59m       True
`},
		{name: "wide", args: []string{"-o", "wide"}, want: "" +
			"NAME   OWNER   TARGET         ACCESS   EXPIRES   READY   EXPIRES-AT             APPROVAL          REASON\n" +
			"fix    alice   shoot/local    admin    59m       True    2026-11-30T11:00:00Z   Approved by bob   INC-4711\n" +
			"look   bob     cluster/mc-1   viewer   59m       True    2026-11-30T11:00:00Z                     \n"},
		{name: "table of every namespace", args: []string{"-A"}, want: `NAMESPACE   NAME    OWNER   TARGET         ACCESS   EXPIRES   READY
demo        fix     alice   shoot/local    admin    59m       True
demo        look    bob     cluster/mc-1   viewer   59m       True
sre         audit   carol   shoot/local    viewer   59m       True
`},
		{name: "table without headers, with a label's column", args: []string{"--no-headers", "-L", "team"}, want: `fix    alice   shoot/local    admin    59m   True   demo
look   bob     cluster/mc-1   viewer   59m   True   demo
`},
		{name: "no sessions", args: []string{"-n", "empty"}, wantErrOut: "No sessions found.\n"},
		{name: "json", args: []string{"-o", "json"}},
		{name: "yaml", args: []string{"-o", "yaml"}},
		{name: "kyaml", args: []string{"-o", "kyaml"}},
		{name: "name", args: []string{"-o", "name"}, want: "session.clustergate.dev/fix\nsession.clustergate.dev/look\n"},
		{name: "name of every namespace", args: []string{"-A", "-o", "name"},
			want: "session.clustergate.dev/fix\nsession.clustergate.dev/look\nsession.clustergate.dev/audit\n"},
		{name: "jsonpath", args: []string{"-o", "jsonpath={.items[*].metadata.name}"}, want: "fix look"},
		{name: "go-template", args: []string{"-o", `go-template={{range .items}}{{.metadata.name}}={{.spec.accessLevel.group}}{{"\n"}}{{end}}`},
			want: "fix=admin\nlook=viewer\n"},
		{name: "go-template of --template alone", args: []string{"--template", "{{len .items}} sessions"}, want: "2 sessions"},
		{name: "custom-columns", args: []string{"-o", "custom-columns=NAME:.metadata.name,OWNER:.spec.owner.username,REASON:.spec.reason"},
			want: "NAME   OWNER   REASON\nfix    alice   INC-4711\nlook   bob     <none>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append([]string{"list", "--kubeconfig", *a.g.flags.KubeConfig}, tt.args...))
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("error output (-want +got):\n%s", diff)
			}
			if tt.want != "" || tt.wantErrOut != "" {
				if diff := cmp.Diff(tt.want, out.String()); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(printedSessions(t), decodeList(t, out.Bytes())); diff != "" {
				t.Errorf("sessions printed (-want +got):\n%s", diff)
			}
		})
	}
}

// printedSessions are the sessions of demo as kubectl prints them in JSON or
// YAML: each with its kind, without managedFields.
func printedSessions(t *testing.T) *unstructured.UnstructuredList {
	t.Helper()
	list := &v1alpha1.SessionList{
		TypeMeta: metav1.TypeMeta{Kind: "SessionList", APIVersion: v1alpha1.SchemeGroupVersion.String()},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
	}
	for _, l := range listedIn("demo") {
		s, err := l.session()
		if err != nil {
			t.Fatal(err)
		}
		s.TypeMeta = metav1.TypeMeta{Kind: "Session", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		s.ManagedFields = nil
		list.Items = append(list.Items, s)
	}
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return decodeList(t, data)
}

// decodeList decodes a list printed in JSON or YAML.
func decodeList(t *testing.T, printed []byte) *unstructured.UnstructuredList {
	t.Helper()
	data, err := yaml.YAMLToJSON(printed)
	if err != nil {
		t.Fatalf("output %q: %v", printed, err)
	}
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(data); err != nil {
		t.Fatalf("output %q: %v", printed, err)
	}
	return list
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
