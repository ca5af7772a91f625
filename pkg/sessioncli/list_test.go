// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// listedSession is a session the fake API server lists, with what the
// server's table shows of it.
type listedSession struct {
	namespace, name, owner, target, group, reason, approval string
	// scope are the namespaces of a scoped session.
	scope []string
	// pending is the request that waits for an approver, if one does.
	pending string
}

// listed are the sessions of the fake API server: two in demo, the
// kubeconfig's namespace, and one in sre, whose reason would overwrite its
// row with backspaces, a tab and a C1 CSI, were they not escaped.
var listed = []listedSession{
	{namespace: "demo", name: "fix", owner: "alice", target: "shoot/local", group: "admin", reason: "INC-4711", approval: "Approved by bob"},
	{namespace: "demo", name: "look", owner: "bob", target: "cluster/mc-1", group: "viewer", scope: []string{"shop", "shop-db"}},
	{namespace: "sre", name: "audit", owner: "carol", target: "shoot/local", group: "viewer", reason: "audit\b\b\b\b\bfine\t\u009b2K", approval: "Pending", pending: "Open"},
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
	var scope *v1alpha1.SessionScope
	if l.scope != nil {
		scope = &v1alpha1.SessionScope{Namespaces: l.scope}
	}
	status := v1alpha1.SessionStatus{ExpiresAt: &expires}
	if l.pending != "" {
		// Under the policy, bob approved, one more is needed.
		status.ApprovalPolicy = &v1alpha1.AppliedApprovalPolicy{Name: "shop", Generation: 1, ApprovalRequired: true,
			Approvers: &v1alpha1.SessionApprovers{Count: 2, Groups: []string{"shop-oncall"}}}
		status.Approvals = []v1alpha1.SessionApproval{{Type: v1alpha1.SessionApprovalType(l.pending), Decision: v1alpha1.ApprovalPending,
			Policy: "shop", Required: 2, Decisions: []v1alpha1.ApproverDecision{{Approver: "bob", Decision: v1alpha1.ApprovalApproved}}}}
	}
	return v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: l.namespace, Labels: map[string]string{"team": l.namespace},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-session", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: v1alpha1.SessionOwner{Username: l.owner},
			AccessLevel: v1alpha1.AccessLevel{Group: l.group}, Target: target, Reason: l.reason, Scope: scope},
		Status: status,
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
			{Name: "Scope", Type: "string", Priority: 1}, {Name: "Expires-At", Type: "string", Format: "date-time", Priority: 1},
			{Name: "Approval", Type: "string", Priority: 1}, {Name: "Reason", Type: "string", Priority: 1},
		},
	}
	if r.PathValue("namespace") == "forbidden" {
		// As kube-apiserver refuses a list RBAC does not allow.
		refusal := apierrors.NewForbidden(v1alpha1.Resource("sessions"), "", errors.New(`User "bob" cannot list resource "sessions" in API group "clustergate.dev" in the namespace "forbidden"`))
		refusal.ErrStatus.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(&refusal.ErrStatus)
		return
	}
	selector := r.URL.Query().Get("fieldSelector")
	if selector != "" && selector != v1alpha1.FieldPendingApproval+"!=" {
		http.Error(w, "field label not supported: "+selector, http.StatusBadRequest)
		return
	}
	for _, l := range listedIn(r.PathValue("namespace")) {
		if selector != "" && l.pending == "" {
			continue
		}
		s, err := l.session()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		sessions.Items = append(sessions.Items, s)
		var rowObject any = &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: s.ObjectMeta}
		if r.URL.Query().Get("includeObject") == string(metav1.IncludeObject) {
			full := s
			full.TypeMeta = metav1.TypeMeta{Kind: "Session", APIVersion: v1alpha1.SchemeGroupVersion.String()}
			rowObject = &full
		}
		object, err := json.Marshal(rowObject)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []any{l.name, l.owner, l.target, l.group, "59m", "True", scopeCell(l.scope), s.Status.ExpiresAt.UTC().Format(time.RFC3339), l.approval, l.reason},
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

// TestListRefused lists where RBAC refuses the caller: the error is the
// server's Forbidden, as kubectl prints it, not "unknown", in a table and
// in every other format.
func TestListRefused(t *testing.T) {
	a := newFakeAPI(t)
	want := `sessions.clustergate.dev is forbidden: User "bob" cannot list resource "sessions" in API group "clustergate.dev" in the namespace "forbidden"`
	for _, args := range [][]string{{"--pending"}, {"-o", "wide"}, {"-o", "json"}} {
		_, _, err := a.runCommand(t, nil, append([]string{"list", "-n", "forbidden"}, args...)...)
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("list %v: %v, want the server's Forbidden: %s", args, err, want)
		}
	}
}

// scopeCell is the server's SCOPE of a session: its namespaces, or "*".
func scopeCell(scope []string) string {
	if scope == nil {
		return "*"
	}
	return strings.Join(scope, ",")
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
			"NAME   OWNER   TARGET         ACCESS   EXPIRES   READY   SCOPE          EXPIRES-AT             APPROVAL          REASON\n" +
			"fix    alice   shoot/local    admin    59m       True    *              2026-11-30T11:00:00Z   Approved by bob   INC-4711\n" +
			"look   bob     cluster/mc-1   viewer   59m       True    shop,shop-db   2026-11-30T11:00:00Z                     \n"},
		{name: "table of every namespace", args: []string{"-A"}, want: `NAMESPACE   NAME    OWNER   TARGET         ACCESS   EXPIRES   READY
demo        fix     alice   shoot/local    admin    59m       True
demo        look    bob     cluster/mc-1   viewer   59m       True
sre         audit   carol   shoot/local    viewer   59m       True
`},
		{name: "table without headers, with a label's column", args: []string{"--no-headers", "-L", "team"}, want: `fix    alice   shoot/local    admin    59m   True   demo
look   bob     cluster/mc-1   viewer   59m   True   demo
`},
		{name: "waiting for an approver, of every namespace", args: []string{"--pending", "-A", "-o", "wide"}, want: "" +
			"NAMESPACE   NAME    OWNER   TARGET        ACCESS   EXPIRES   READY   SCOPE   EXPIRES-AT             APPROVAL   REASON                       MISSING   MAY-APPROVE         POLICY\n" +
			"sre         audit   carol   shoot/local   viewer   59m       True    *       2026-11-30T11:00:00Z   Pending    audit^H^H^H^H^Hfine^I^[[2K   1 of 2    group:shop-oncall   shop\n"},
		{name: "waiting: how many approvals are missing and who may give them", args: []string{"--pending", "-n", "sre"}, want: "" +
			"NAME    OWNER   TARGET        ACCESS   EXPIRES   READY   MISSING   MAY-APPROVE         POLICY\n" +
			"audit   carol   shoot/local   viewer   59m       True    1 of 2    group:shop-oncall   shop\n"},
		{name: "none waiting", args: []string{"--pending"}, wantErrOut: "No sessions found.\n"},
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
			cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
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
