// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package chart_test renders charts/clustergate with Helm (the pinned
// helm of hack/tools/helm, make test-chart builds it): every combination
// of its layout values gives the objects of the kustomize layout it
// stands for, each values file of charts/clustergate/ci gives its golden
// rendering, and values the chart cannot honour are refused with the
// path or the reason.
package chart_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/chart"
	"github.com/clustergate/clustergate/internal/release"
)

var update = flag.Bool("update", false, "rewrite the golden renderings in testdata/")

const (
	chartDir = "../../charts/clustergate"
	// caPEM stands for a CA's certificate: the chart only encodes it.
	caPEM = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAj\n-----END CERTIFICATE-----\n"
)

// helm runs the pinned helm and returns its standard output.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := filepath.Abs("../../_output/bin/helm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no helm: build it with hack/tools/build.sh helm (make test-chart does): %v", err)
	}
	cmd := exec.CommandContext(context.Background(), bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		return out, &helmError{err: err, stderr: stderr.String()}
	}
	return out, nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + e.stderr }

// objects decodes a multi-document rendering, keyed by kind, namespace
// and name.
func objects(t *testing.T, rendered []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if len(u.Object) == 0 {
			continue
		}
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		if _, dup := out[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out[key] = u
	}
	return out
}

// TestRenderingsAreTheLayouts renders the chart with each combination of
// its layout values and compares the objects with those of the kustomize
// layout, as kubectl apply -k would create them: the same objects, but
// for the release's namespace (which helm install --create-namespace
// makes) and, without cert-manager, the APIService's caBundle.
func TestRenderingsAreTheLayouts(t *testing.T) {
	work := t.TempDir()
	for _, v := range chart.Variants() {
		t.Run(strings.Join(v.Set, ","), func(t *testing.T) {
			args := []string{"template", "clustergate", chartDir, "--namespace", chart.Namespace}
			for _, s := range v.Set {
				args = append(args, "--set", s)
			}
			if !v.CertManager {
				args = append(args, "--set", "tls.caBundle="+caPEM)
			}
			rendered, err := helm(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			got := objects(t, rendered)
			if !v.CertManager {
				api := got["APIService//v1alpha1.clustergate.dev"]
				if api == nil {
					t.Fatal("no APIService")
				}
				caBundle, _, _ := unstructured.NestedString(api.Object, "spec", "caBundle")
				if caBundle != base64.StdEncoding.EncodeToString([]byte(caPEM)) {
					t.Errorf("APIService caBundle %q, want tls.caBundle base64-encoded", caBundle)
				}
				unstructured.RemoveNestedField(api.Object, "spec", "caBundle")
			}
			layout, err := release.RenderLayout(context.Background(), "kubectl", mustAbs(t, "../../artifacts"), work, v.Layout, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := objects(t, layout)
			delete(want, "Namespace//"+chart.Namespace)
			if len(want) < 20 {
				t.Fatalf("the layout has only %d objects", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the chart's objects differ from the layout's (-layout +chart):\n%s", diff)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestGoldenRenderings renders the chart with each values file of its
// ci/ directory and compares with testdata/<file> (go test -update
// rewrites them): a change of the chart shows in review as a change of
// what it installs.
func TestGoldenRenderings(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("values files in %s/ci: %v %v", chartDir, files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			rendered, err := helm(t, "template", "clustergate", chartDir, "--namespace", "landscape-system", "--values", f)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(golden, rendered, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(rendered)); diff != "" {
				t.Errorf("%s renders differently from %s (go test ./test/chart -update rewrites it):\n%s", name, golden, diff)
			}
		})
	}
}

// TestValuesTakeEffect checks the values the layouts leave to an
// overlay in the rendering of ci/ha-operations.yaml and
// ci/single-secret.yaml.
func TestValuesTakeEffect(t *testing.T) {
	render := func(file string) map[string]*unstructured.Unstructured {
		out, err := helm(t, "template", "clustergate", chartDir, "--namespace", "landscape-system", "--values", filepath.Join(chartDir, "ci", file))
		if err != nil {
			t.Fatal(err)
		}
		return objects(t, out)
	}
	ops, single := render("ha-operations.yaml"), render("single-secret.yaml")
	field := func(objs map[string]*unstructured.Unstructured, key string, path ...string) any {
		o := objs[key]
		if o == nil {
			t.Fatalf("no %s", key)
		}
		v, _, err := unstructured.NestedFieldNoCopy(o.Object, path...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	server := "Deployment/landscape-system/clustergate"
	etcd := "StatefulSet/landscape-system/clustergate-etcd"
	container := func(objs map[string]*unstructured.Unstructured, key string, path ...string) map[string]any {
		cs, _ := field(objs, key, append(path, "containers")...).([]any)
		return cs[0].(map[string]any)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"server image by digest", container(ops, server, "spec", "template", "spec")["image"],
			"registry.example.com/clustergate/clustergate-apiserver@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"etcd image by digest", container(ops, etcd, "spec", "template", "spec")["image"],
			"registry.example.com/clustergate/etcd@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"},
		{"replicas", field(ops, server, "spec", "replicas"), float64(3)},
		{"server resources", container(ops, server, "spec", "template", "spec")["resources"],
			map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "512Mi"}, "limits": map[string]any{"memory": "2Gi"}}},
		{"priority class of the server", field(ops, server, "spec", "template", "spec", "priorityClassName"), "system-cluster-critical"},
		{"priority class of etcd", field(ops, etcd, "spec", "template", "spec", "priorityClassName"), "system-cluster-critical"},
		{"priority class of a snapshot job", field(ops, "CronJob/landscape-system/clustergate-etcd-snapshot-00",
			"spec", "jobTemplate", "spec", "template", "spec", "priorityClassName"), "system-cluster-critical"},
		{"extra flags after the layout's", lastOf(container(ops, server, "spec", "template", "spec")["args"], 2),
			[]any{"--gardener-kubeconfig=/etc/clustergate/gardener/kubeconfig", "--gardener-project=ops"}},
		{"extra volume", lastOf(field(ops, server, "spec", "template", "spec", "volumes"), 1),
			[]any{map[string]any{"name": "gardener-kubeconfig", "secret": map[string]any{"secretName": "gardener-kubeconfig"}}}},
		{"extra volume mount", lastOf(container(ops, server, "spec", "template", "spec")["volumeMounts"], 1),
			[]any{map[string]any{"name": "gardener-kubeconfig", "mountPath": "/etc/clustergate/gardener", "readOnly": true}}},
		{"no PodDisruptionBudget", ops["PodDisruptionBudget/landscape-system/clustergate"] == nil, true},
		{"ServiceMonitor", ops["ServiceMonitor/landscape-system/clustergate"] != nil, true},
		{"etcd's claims in the storage class", field(ops, etcd, "spec", "volumeClaimTemplates").([]any)[0].(map[string]any)["spec"].(map[string]any)["storageClassName"], "fast-ssd"},
		{"the APIService's Service in the release's namespace", field(single, "APIService//v1alpha1.clustergate.dev", "spec", "service", "namespace"), "landscape-system"},
		{"the serving certificate from the existing Secret", field(single, server, "spec", "template", "spec", "volumes").([]any)[0].(map[string]any)["secret"].(map[string]any)["secretName"], "my-serving-cert"},
		{"the data claim in the storage class", field(single, "PersistentVolumeClaim/landscape-system/clustergate-data", "spec", "storageClassName"), "fast-ssd"},
		{"no cert-manager Certificate", single["Certificate/landscape-system/clustergate-serving-cert"] == nil, true},
		{"no priority class by default", field(single, server, "spec", "template", "spec", "priorityClassName"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// lastOf is the last n items of a list, nil if it is none or shorter.
func lastOf(list any, n int) []any {
	l, _ := list.([]any)
	if len(l) < n {
		return nil
	}
	return l[len(l)-n:]
}

// TestValuesRefused: values the chart cannot honour fail before
// anything is rendered, saying which value and why.
func TestValuesRefused(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"a misspelt value", []string{"highAvailabilty.enabled=true"}, "additional properties 'highAvailabilty' not allowed"},
		{"an unknown certificate source", []string{"tls.source=vault"}, "at '/tls/source'"},
		{"one replica called highly available", []string{"highAvailability.replicas=1"}, "at '/highAvailability/replicas'"},
		{"a flag without its dashes", []string{"extraArgs={gardener-project=ops}"}, "at '/extraArgs/0'"},
		{"a digest that is none", []string{"image.digest=latest"}, "at '/image/digest'"},
		{"a Secret without its CA", []string{"tls.source=secret"},
			"tls.source is secret: set tls.caBundle to the PEM of the CA that issued the serving certificate, or create the Secret landscape-system/clustergate-serving-cert with ca.crt before installing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "clustergate", chartDir, "--namespace", "landscape-system"}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			_, err := helm(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("helm template --set %v: %v, want an error with %q", tt.set, err, tt.want)
			}
		})
	}
}
