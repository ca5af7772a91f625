// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"reflect"
	"testing"
)

func TestRaisesToNewest(t *testing.T) {
	tests := []struct {
		name string
		used map[string]map[string]string
		want []raise
	}{
		{
			name: "one version everywhere",
			used: map[string]map[string]string{
				".":               {"google.golang.org/grpc": "v1.83.2"},
				"hack/tools/kube": {"google.golang.org/grpc": "v1.83.2"},
			},
		},
		{
			name: "each older one raised to the newest, pre-releases below their release",
			used: map[string]map[string]string{
				".":                 {"google.golang.org/protobuf": "v1.36.12", "k8s.io/api": "v0.37.2"},
				"hack/tools/kube":   {"google.golang.org/protobuf": "v1.36.12-0.20260120151049-f2248ac996af", "k8s.io/api": "v0.37.2"},
				"hack/tools/helm":   {"google.golang.org/protobuf": "v1.36.11", "k8s.io/api": "v0.36.2"},
				"test/tools/node":   {"golang.org/x/net": "v0.57.0"},
				"hack/tools/cosign": {"golang.org/x/net": "v0.62.0"},
			},
			want: []raise{
				{dir: "hack/tools/helm", module: "google.golang.org/protobuf", from: "v1.36.11", to: "v1.36.12"},
				{dir: "hack/tools/helm", module: "k8s.io/api", from: "v0.36.2", to: "v0.37.2"},
				{dir: "hack/tools/kube", module: "google.golang.org/protobuf", from: "v1.36.12-0.20260120151049-f2248ac996af", to: "v1.36.12"},
				{dir: "test/tools/node", module: "golang.org/x/net", from: "v0.57.0", to: "v0.62.0"},
			},
		},
		{
			name: "a module only one set builds is its own affair",
			used: map[string]map[string]string{
				".":                   {"go.etcd.io/etcd/server/v3": "v3.7.3"},
				"hack/tools/gardener": {"github.com/gardener/gardener": "v1.145.0"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := raisesToNewest(tt.used); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("raisesToNewest() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOwnVersion(t *testing.T) {
	tests := []struct {
		dir, module string
		want        bool
	}{
		{"hack/tools/krew", "golang.org/x/net", true},
		{"hack/tools/gardener", "k8s.io/api", true},
		{"hack/tools/gardener", "github.com/prometheus/client_golang", true},
		{"hack/tools/gardener", "google.golang.org/grpc", false},
		{"hack/tools/kube", "k8s.io/api", false},
		{".", "k8s.io/api", false},
	}
	for _, tt := range tests {
		if got := ownVersion(tt.dir, tt.module); got != tt.want {
			t.Errorf("ownVersion(%q, %q) = %v, want %v", tt.dir, tt.module, got, tt.want)
		}
	}
}
