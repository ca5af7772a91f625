// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package artifacts

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// layout is a way to install: a kustomization, and what it must hold.
type layout struct {
	name string
	// kustomization is written to overlay/kustomization.yaml next to a copy
	// of artifacts/, as a user's overlay would be; empty renders dir.
	kustomization string
	dir           string
	ha            bool
	certManager   bool
}

var layouts = []layout{
	{name: "base", dir: "artifacts"},
	{name: "ha", dir: "artifacts/overlays/ha", ha: true},
	{name: "base with cert-manager", certManager: true, kustomization: `
resources: [../artifacts]
components: [../artifacts/components/cert-manager]
`},
	{name: "ha with cert-manager", ha: true, certManager: true, kustomization: `
resources: [../artifacts/overlays/ha]
components: [../artifacts/components/cert-manager]
`},
	{name: "ha with the data plane and monitoring", ha: true, kustomization: `
resources: [../artifacts/overlays/ha]
components: [../artifacts/components/data-plane, ../artifacts/monitoring]
`},
}

// rendered is a layout's objects by kind and name, as YAML.
type rendered map[string]map[string][]byte

func (r rendered) decode(t *testing.T, kind, name string, into any) bool {
	t.Helper()
	data, ok := r[kind][name]
	if !ok {
		return false
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	return true
}

// render builds l with kustomize from an in-memory copy of artifacts/.
func render(t *testing.T, l layout) rendered {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(filepath.Join(repo, "artifacts"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(repo, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join("/", rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("/", l.dir)
	if l.kustomization != "" {
		dir = "/overlay"
		if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(l.kustomization)); err != nil {
			t.Fatal(err)
		}
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", l.name, err)
	}
	out := rendered{}
	for _, res := range resources.Resources() {
		data, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if out[res.GetKind()] == nil {
			out[res.GetKind()] = map[string][]byte{}
		}
		out[res.GetKind()][res.GetName()] = data
	}
	return out
}

// podSpecs returns the pod templates of a layout's workloads.
func podSpecs(t *testing.T, r rendered) map[string]*corev1.PodSpec {
	t.Helper()
	pods := map[string]*corev1.PodSpec{}
	for name := range r["Deployment"] {
		var d appsv1.Deployment
		r.decode(t, "Deployment", name, &d)
		pods["Deployment "+name] = &d.Spec.Template.Spec
	}
	for name := range r["StatefulSet"] {
		var s appsv1.StatefulSet
		r.decode(t, "StatefulSet", name, &s)
		pods["StatefulSet "+name] = &s.Spec.Template.Spec
	}
	for name := range r["CronJob"] {
		var c batchv1.CronJob
		r.decode(t, "CronJob", name, &c)
		pods["CronJob "+name] = &c.Spec.JobTemplate.Spec.Template.Spec
	}
	return pods
}

// mountedSecrets are the Secrets that pods in clustergate-system mount.
func mountedSecrets(t *testing.T, r rendered) []string {
	t.Helper()
	var secrets []string
	for name, pod := range podSpecs(t, r) {
		if name == "Deployment clustergate-data-plane-gateway" {
			continue // the data plane's gateway: Secrets the user brings
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				secrets = append(secrets, v.Secret.SecretName)
			}
		}
	}
	return secrets
}

// volumeAt returns the volume pod's first container mounts at path.
func volumeAt(pod *corev1.PodSpec, path string) corev1.Volume {
	for _, m := range pod.Containers[0].VolumeMounts {
		if filepath.Clean(m.MountPath) == filepath.Clean(path) {
			for _, v := range pod.Volumes {
				if v.Name == m.Name {
					return v
				}
			}
		}
	}
	return corev1.Volume{}
}

// replicas is a workload's replicas, 1 if unset.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// selects reports whether a selector's labels all match a pod's.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}
