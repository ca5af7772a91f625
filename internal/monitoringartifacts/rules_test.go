// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package monitoringartifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDivide(t *testing.T) {
	tests := []struct {
		in      string
		factor  int
		want    string
		wantErr bool
	}{
		{in: "5m", factor: 20, want: "15s"},
		{in: "1h30m", factor: 2, want: "45m"},
		{in: "30s", factor: 20, want: "1s500ms"},
		{in: "1d", factor: 24, want: "1h"},
		{in: "250ms", factor: 1, want: "250ms"},
		{in: "", factor: 20, want: ""},
		{in: "5x", factor: 2, wantErr: true},
		{in: "1ms", factor: 2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := divide(tt.in, tt.factor)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("divide(%q, %d) = %q, %v; want %q, error %v", tt.in, tt.factor, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCompressed(t *testing.T) {
	r := &PrometheusRule{Spec: Spec{Groups: []Group{{Name: "g", Interval: "1m", Rules: []Rule{
		{Record: "r", Expr: `sum(rate(a_total{x=~"[0-9a-z]+"}[5m])) / sum(max_over_time(b[1h:1m])) + c[10m:]`},
		{Alert: "A", Expr: "time() - r > 300", For: "10m", KeepFiringFor: "2m"},
	}}}}}
	got, err := r.Compressed(10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{{Name: "g", Interval: "6s", Rules: []Rule{
		{Record: "r", Expr: `sum(rate(a_total{x=~"[0-9a-z]+"}[30s])) / sum(max_over_time(b[6m:6s])) + c[1m:]`},
		{Alert: "A", Expr: "time() - r > 300", For: "1m", KeepFiringFor: "12s"},
	}}}
	if diff := cmp.Diff(want, got.Spec.Groups); diff != "" {
		t.Errorf("compressed (-want +got):\n%s", diff)
	}
	if r.Spec.Groups[0].Rules[1].For != "10m" {
		t.Error("Compressed changed the original")
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "valid", yaml: "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: up == 0\n"},
		{name: "misspelt field", yaml: "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nspec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: up == 0\n      annotation: {summary: x}\n", wantErr: "unknown field"},
		{name: "another kind", yaml: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "not a monitoring.coreos.com/v1 PrometheusRule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Read: %v, want error %q", err, tt.wantErr)
			}
		})
	}
}
