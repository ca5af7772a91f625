// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionaccess

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string // a part of the error; empty is none
	}{
		{name: "levels and rules", file: `
apiVersion: config.clustergate.dev/v1alpha1
kind: SessionAccessConfiguration
levels:
- {name: admin, group: admin, namespacedClusterRole: admin}
- {name: debugger, namespacedClusterRole: clustergate:debugger}
- {name: moderated-admin, group: admin, moderated: true}
denyRules:
- {name: no-namespace-delete, verbs: [delete], resources: [namespaces]}
`},
		{name: "wrong kind", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: Other\nlevels: [{name: admin, group: admin}]",
			wantErr: "apiVersion: Invalid value"},
		{name: "misspelt field", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: admin, groop: admin}]",
			wantErr: `unknown field "groop"`},
		{name: "no levels", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration",
			wantErr: "levels: Required value"},
		{name: "level that grants nothing", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: admin}]",
			wantErr: "levels[0]: Required value"},
		{name: "level twice", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: a, group: a}, {name: a, group: b}]",
			wantErr: "levels[1].name: Duplicate value"},
		{name: "level named like no verb", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: 'a/b', group: a}]",
			wantErr: "levels[0].name: Invalid value"},
		{name: "rule that matches everything", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: a, group: a}]\ndenyRules: [{name: all, levels: [a]}]",
			wantErr: "denyRules[0]: Required value"},
		{name: "rule for an unknown level", file: "apiVersion: config.clustergate.dev/v1alpha1\nkind: SessionAccessConfiguration\nlevels: [{name: a, group: a}]\ndenyRules: [{name: r, verbs: [get], levels: [b]}]",
			wantErr: "denyRules[0].levels[0]: Unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.yaml")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Load: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

// TestShippedExample keeps the documented example loadable and its levels
// what the docs say.
func TestShippedExample(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "artifacts", "examples", "session-access.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	all, whole, scopable := c.Groups()
	if diff := cmp.Diff([]string{"admin", "debugger", "viewer"}, sets.List(all)); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	if !whole.Equal(sets.New("admin", "viewer")) || !scopable.Equal(sets.New("admin", "viewer", "debugger")) {
		t.Errorf("whole-target levels %v, scopable %v", sets.List(whole), sets.List(scopable))
	}
}

func TestFromGroupsKeepsTodaysMeaning(t *testing.T) {
	c := FromGroups([]string{"admin", "viewer", "approved"})
	if errs := c.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []Level{
		{Name: "admin", Group: "admin", NamespacedClusterRole: "admin"},
		{Name: "viewer", Group: "viewer", NamespacedClusterRole: "view"},
		{Name: "approved", Group: "approved"},
	}
	if diff := cmp.Diff(want, c.Levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}

func TestRequiresModerator(t *testing.T) {
	c := &Configuration{Levels: []Level{{Name: "admin", Group: "admin", Moderated: true}, {Name: "viewer", Group: "viewer"}}}
	tests := []struct {
		name   string
		config *Configuration
		level  string
		want   bool
	}{
		{name: "moderated level", config: c, level: "admin", want: true},
		{name: "level without moderation", config: c, level: "viewer"},
		{name: "unknown level", config: c, level: "debugger"},
		{name: "no configuration", level: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.config.RequiresModerator(tt.level); got != tt.want {
				t.Errorf("RequiresModerator(%q) = %v, want %v", tt.level, got, tt.want)
			}
		})
	}
}
