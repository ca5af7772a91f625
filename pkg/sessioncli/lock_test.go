// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// codecs decode what the clientset sends.
var codecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(scheme)
}()

func TestLockOptions(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 500, time.UTC)
	later := metav1.NewTime(time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC))
	tests := []struct {
		name    string
		o       lockOptions
		want    v1alpha1.SessionLock
		wantErr string
	}{
		{name: "user, generated name", o: lockOptions{user: "alice", reason: "INC-1"},
			want: v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"}, Spec: v1alpha1.SessionLockSpec{User: "alice", Reason: "INC-1"}}},
		{name: "a person in both identity spaces", o: lockOptions{user: "alice", dataPlaneUsers: []string{"dataplane:alice@example.com"}, reason: "INC-1"},
			want: v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"}, Spec: v1alpha1.SessionLockSpec{
				User: "alice", Users: []string{"dataplane:alice@example.com"}, Reason: "INC-1"}}},
		{name: "shoot target, ttl", o: lockOptions{target: "shoot/prod", reason: "INC-2", ttl: 30 * time.Minute, name: "prod"},
			want: v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: v1alpha1.SessionLockSpec{
				Target: &v1alpha1.SessionLockTarget{Shoot: &v1alpha1.ShootReference{Name: "prod"}}, Reason: "INC-2", ExpiresAt: &later}}},
		{name: "cluster target, group and namespace", o: lockOptions{target: "cluster/mc-1", group: "sre", namespace: "team-a", reason: "r"},
			want: v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"}, Spec: v1alpha1.SessionLockSpec{
				Group: "sre", Namespace: "team-a", Target: &v1alpha1.SessionLockTarget{Cluster: &v1alpha1.LocalSecretReference{Name: "mc-1"}}, Reason: "r"}}},
		{name: "bad target", o: lockOptions{target: "pod/x", reason: "r"}, wantErr: "must be shoot/NAME, shoot/PROJECT/NAME or cluster/NAME"},
		{name: "negative ttl", o: lockOptions{user: "alice", reason: "r", ttl: -time.Minute}, wantErr: "--ttl must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.lock(now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("lock (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLockCommands runs lock, unlock and locks against a fake API server:
// lock POSTs the lock and prints the name the server gave it, unlock
// DELETEs it, locks prints the server's table.
func TestLockCommands(t *testing.T) {
	a := newFakeAPI(t)
	var created v1alpha1.SessionLock
	var deleted []string
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("POST /apis/clustergate.dev/v1alpha1/sessionlocks", func(w http.ResponseWriter, r *http.Request) {
		// The clientset sends protobuf.
		body, err := io.ReadAll(r.Body)
		if err == nil {
			_, _, err = codecs.UniversalDeserializer().Decode(body, nil, &created)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer := created
		answer.TypeMeta = metav1.TypeMeta{Kind: "SessionLock", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		answer.Name = answer.GenerateName + "x7k2p"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&answer)
	})
	mux.HandleFunc("DELETE /apis/clustergate.dev/v1alpha1/sessionlocks/{name}", func(w http.ResponseWriter, r *http.Request) {
		deleted = append(deleted, r.PathValue("name"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	})
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/sessionlocks", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
			http.Error(w, "want a table", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&metav1.Table{
			TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			ColumnDefinitions: []metav1.TableColumnDefinition{
				{Name: "Name", Type: "string", Format: "name"}, {Name: "User", Type: "string"}, {Name: "Reason", Type: "string"},
			},
			Rows: []metav1.TableRow{{Cells: []any{"lock-x7k2p", "alice", "INC-1"}}},
		})
	})
	// run returns what the command printed to stdout and to stderr.
	run2 := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append(args, "--kubeconfig", *a.g.flags.KubeConfig))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String(), errOut.String()
	}
	run := func(args ...string) string {
		t.Helper()
		out, _ := run2(args...)
		return out
	}

	locks := []struct {
		name     string
		args     []string
		want     v1alpha1.SessionLockSpec
		wantErrs string
	}{
		{name: "garden user only", args: []string{"--user", "alice", "-n", "team-a"},
			want: v1alpha1.SessionLockSpec{User: "alice", Namespace: "team-a", Reason: "INC-1"},
			wantErrs: "lock-x7k2p locks garden user alice\n" +
				"lock-x7k2p does not lock alice's sessions on the data plane, owned by their data-plane name (dataplane:...): " +
				"name it with --dataplane-user too, or add it to spec.users\n"},
		{name: "both identity spaces", args: []string{"--user", "alice", "--dataplane-user", "dataplane:alice@example.com"},
			want:     v1alpha1.SessionLockSpec{User: "alice", Users: []string{"dataplane:alice@example.com"}, Reason: "INC-1"},
			wantErrs: "lock-x7k2p locks garden user alice\nlock-x7k2p locks data-plane user dataplane:alice@example.com\n"},
		{name: "group", args: []string{"--group", "sre"},
			want:     v1alpha1.SessionLockSpec{Group: "sre", Reason: "INC-1"},
			wantErrs: "lock-x7k2p locks group sre: owners recorded in it, and requesters in it now\n"},
	}
	for _, tt := range locks {
		t.Run(tt.name, func(t *testing.T) {
			created = v1alpha1.SessionLock{}
			out, errOut := run2(append([]string{"lock", "--reason", "INC-1"}, tt.args...)...)
			if out != "lock-x7k2p\n" {
				t.Errorf("lock printed %q to stdout, want the lock's name alone", out)
			}
			if errOut != tt.wantErrs {
				t.Errorf("lock printed to stderr:\n%s\nwant:\n%s", errOut, tt.wantErrs)
			}
			if diff := cmp.Diff(tt.want, created.Spec); diff != "" {
				t.Errorf("lock sent (-want +got):\n%s", diff)
			}
		})
	}
	if out := run("locks"); out != "NAME         USER    REASON\nlock-x7k2p   alice   INC-1\n" {
		t.Errorf("locks printed:\n%s", out)
	}
	if out := run("unlock", "lock-x7k2p"); out != "sessionlock lock-x7k2p removed\n" || !cmp.Equal(deleted, []string{"lock-x7k2p"}) {
		t.Errorf("unlock printed %q, deleted %v", out, deleted)
	}
}
