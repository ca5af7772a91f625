// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestOpenScope runs open against a fake API server: --namespaces sets
// spec.scope.namespaces, and the server's refusals come back as they are,
// so that kubectl-session prints them as kubectl does (cmdutil.CheckErr).
// The server refuses the namespace cart as TargetAccess does and the
// namespace Shop as validation does.
func TestOpenScope(t *testing.T) {
	a := newFakeAPI(t)
	var created *v1alpha1.Session
	forbidden := `user "alice" may not open "debugger" sessions to namespace cart of shoots/prod in namespace demo: ` +
		`that needs the verb "debugger" on shoots.clustergate.dev named "prod", or named "prod/cart"`
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("POST /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions", func(w http.ResponseWriter, r *http.Request) {
		// The clientset sends protobuf.
		s := &v1alpha1.Session{}
		body, err := io.ReadAll(r.Body)
		if err == nil {
			_, _, err = codecs.UniversalDeserializer().Decode(body, nil, s)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		created = s
		s.TypeMeta = metav1.TypeMeta{Kind: "Session", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		s.Name, s.Namespace = s.GenerateName+"x7k2p", "demo"
		var refusal *apierrors.StatusError
		switch {
		case s.Spec.Scope != nil && slices.Contains(s.Spec.Scope.Namespaces, "cart"):
			refusal = apierrors.NewForbidden(v1alpha1.Resource("sessions"), s.Name, errors.New(forbidden))
		case s.Spec.Scope != nil && slices.Contains(s.Spec.Scope.Namespaces, "Shop"):
			refusal = apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("Session").GroupKind(), s.Name, field.ErrorList{
				field.Invalid(field.NewPath("spec", "scope", "namespaces").Index(0), "Shop", "a lowercase RFC 1123 label")})
		}
		w.Header().Set("Content-Type", "application/json")
		if refusal != nil {
			refusal.ErrStatus.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			w.WriteHeader(int(refusal.ErrStatus.Code))
			_ = json.NewEncoder(w).Encode(&refusal.ErrStatus)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s)
	})
	// What kubectl-session prints for an error, as main prints it.
	var printed string
	cmdutil.BehaviorOnFatal(func(msg string, _ int) { printed = msg })
	t.Cleanup(cmdutil.DefaultBehaviorOnFatal)

	tests := []struct {
		name      string
		args      []string
		wantScope *v1alpha1.SessionScope
		// wantPrinted is what kubectl-session prints for the error, if any.
		wantPrinted string
	}{
		{name: "whole target"},
		{name: "namespaces", args: []string{"--namespaces", "shop,shop-db"}, wantScope: &v1alpha1.SessionScope{Namespaces: []string{"shop", "shop-db"}}},
		{name: "namespaces flag repeated", args: []string{"--namespaces", "shop", "--namespaces", "shop-db"},
			wantScope: &v1alpha1.SessionScope{Namespaces: []string{"shop", "shop-db"}}},
		{name: "refused by TargetAccess", args: []string{"--namespaces", "shop,cart"},
			wantScope:   &v1alpha1.SessionScope{Namespaces: []string{"shop", "cart"}},
			wantPrinted: `Error from server (Forbidden): sessions.clustergate.dev "session-x7k2p" is forbidden: ` + forbidden},
		{name: "refused by validation", args: []string{"--namespaces", "Shop"},
			wantScope:   &v1alpha1.SessionScope{Namespaces: []string{"Shop"}},
			wantPrinted: "The Session \"session-x7k2p\" is invalid: spec.scope.namespaces[0]: Invalid value: \"Shop\": a lowercase RFC 1123 label\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, printed = nil, ""
			var out bytes.Buffer
			cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
			cmd.SetArgs(append([]string{"open", "shoot/prod", "--access", "debugger", "--ttl", "1h", "-n", "demo",
				"--kubeconfig", *a.g.flags.KubeConfig}, tt.args...))
			err := cmd.Execute()
			if created == nil {
				t.Fatalf("nothing created: %v", err)
			}
			if diff := cmp.Diff(tt.wantScope, created.Spec.Scope); diff != "" {
				t.Errorf("scope (-want +got):\n%s", diff)
			}
			if tt.wantPrinted == "" {
				if err != nil || out.String() != "session-x7k2p\n" {
					t.Errorf("open: %v, printed %q, want the session's name", err, out.String())
				}
				return
			}
			cmdutil.CheckErr(err)
			if diff := cmp.Diff(tt.wantPrinted, printed); diff != "" {
				t.Errorf("printed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenHelp: the help of open says what --namespaces does.
func TestOpenHelp(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"open", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--namespaces strings", "shoots.clustergate.dev/prod/shop", "--namespaces shop,shop-db"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help does not say %q:\n%s", want, out.String())
		}
	}
}
