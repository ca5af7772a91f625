// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestChartIsGenerated fails while charts/clustergate is not what
// artifacts/ generates: an edit of a layout without make chart, or an
// edit of the chart by hand.
func TestChartIsGenerated(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(context.Background(), "kubectl", "../../artifacts", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	committed := "../../charts/clustergate"
	want, got := files(t, dir), files(t, committed)
	for name, content := range want {
		if got[name] != content {
			t.Errorf("%s differs from what artifacts/ generates: run make chart", filepath.Join("charts/clustergate", name))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("charts/clustergate/%s is not generated: run make chart", name)
		}
	}
}

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if filepath.Dir(rel) == "ci" {
			return nil // the golden tests' values, written by hand
		}
		b, err := os.ReadFile(path)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCondition(t *testing.T) {
	tests := []struct {
		name     string
		variants []int
		want     string
	}{
		{"every variant", []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"highly available", []int{1, 3, 5, 7}, "$.Values.highAvailability.enabled"},
		{"single replica", []int{0, 2, 4, 6}, "not ($.Values.highAvailability.enabled)"},
		{"highly available with cert-manager", []int{3, 7}, `and ($.Values.highAvailability.enabled) (eq $.Values.tls.source "cert-manager")`},
		{"one variant", []int{5}, `and ($.Values.highAvailability.enabled) (not (eq $.Values.tls.source "cert-manager")) ($.Values.monitoring.enabled)`},
		{"no shared dimension", []int{0, 7}, `or (and (not ($.Values.highAvailability.enabled)) (not (eq $.Values.tls.source "cert-manager")) (not ($.Values.monitoring.enabled))) ` +
			`(and ($.Values.highAvailability.enabled) (eq $.Values.tls.source "cert-manager") ($.Values.monitoring.enabled))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := condition(tt.variants); got != tt.want {
				t.Errorf("condition(%v) = %q, want %q", tt.variants, got, tt.want)
			}
		})
	}
}
