// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/release"
)

// Image repositories of the artifacts, and the values that replace them.
const (
	serverRepository = "ghcr.io/clustergate/clustergate-apiserver"
	etcdRepository   = "ghcr.io/clustergate/etcd"
	servingSecret    = "clustergate-serving-cert"
)

// Placeholders templatize leaves in a rendering, each replaced by a
// template when the rendering is written: a value printed as is
// (__CG_VALUE_path__), a block of YAML (key: __CG_BLOCK_path__), a key
// left out while its value is empty (key: __CG_OPTIONAL_path__), items
// appended to a list (- __CG_LIST_path__), an image
// (__CG_IMAGE_path__) and a helper of _helpers.tpl (__CG_INCLUDE_name__).
var placeholders = []struct {
	pattern *regexp.Regexp
	// template expands to the template of a match, given its submatches.
	template func(m []string) string
}{
	{regexp.MustCompile(`__CG_VALUE_([A-Za-z.]+)__`), func(m []string) string { return "{{ $.Values." + m[1] + " }}" }},
	{regexp.MustCompile(`(?m)^( *)([A-Za-z]+): __CG_OPTIONAL_([A-Za-z.]+)__\n`), func(m []string) string {
		return fmt.Sprintf("{{- with $.Values.%s }}\n%s%s: {{ . }}\n{{- end }}\n", m[3], m[1], m[2])
	}},
	{regexp.MustCompile(`(?m)^( *)([A-Za-z]+): __CG_BLOCK_([A-Za-z.]+)__\n`), func(m []string) string {
		return fmt.Sprintf("%s%s: {{- toYaml $.Values.%s | nindent %d }}\n", m[1], m[2], m[3], len(m[1])+2)
	}},
	{regexp.MustCompile(`(?m)^( *)- __CG_LIST_([A-Za-z.]+)__\n`), func(m []string) string {
		return fmt.Sprintf("{{- with $.Values.%s }}\n{{- toYaml . | nindent %d }}\n{{- end }}\n", m[2], len(m[1]))
	}},
	{regexp.MustCompile(`__CG_IMAGE_([A-Za-z.]+)__`), func(m []string) string {
		return `{{ include "clustergate.image" (list $ $.Values.` + m[1] + `) }}`
	}},
	{regexp.MustCompile(`__CG_INCLUDE_([A-Za-z]+)__`), func(m []string) string { return `{{ include "clustergate.` + m[1] + `" $ }}` }},
}

// values holds the defaults the renderings give the values the chart
// templatizes, to write them into values.yaml.
type values struct {
	defaults map[string]any
}

func newValues() *values { return &values{defaults: map[string]any{}} }

// set records value's default and returns the placeholder kind for path;
// a default that differs between variants is an error, since one value
// cannot hold both.
func (vs *values) set(kind, path string, value any) (string, error) {
	if was, ok := vs.defaults[path]; ok && !reflect.DeepEqual(was, value) {
		return "", fmt.Errorf("the artifacts' %s is %v in one layout and %v in another: the chart's value cannot default to both", path, was, value)
	}
	vs.defaults[path] = value
	return "__CG_" + kind + "_" + path + "__", nil
}

// templatize puts placeholders where u of variant v takes the chart's
// values: images, resources, priority class, storage class, replicas,
// the serving certificate's Secret and the APIService's caBundle.
func (vs *values) templatize(u *unstructured.Unstructured, v int) error {
	name := u.GetName()
	switch u.GetKind() {
	case "Deployment", "StatefulSet":
		if err := vs.podSpec(u.Object, name, "spec", "template", "spec"); err != nil {
			return err
		}
		if u.GetKind() == "Deployment" && name == "clustergate" && v&ha != 0 {
			replicas, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
			p, err := vs.set("VALUE", "highAvailability.replicas", replicas)
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(u.Object, p, "spec", "replicas"); err != nil {
				return err
			}
		}
		claims, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates")
		for _, c := range claims {
			spec, _ := c.(map[string]any)["spec"].(map[string]any)
			if spec != nil {
				spec["storageClassName"] = "__CG_OPTIONAL_storageClassName__"
			}
		}
		if len(claims) > 0 {
			return unstructured.SetNestedSlice(u.Object, claims, "spec", "volumeClaimTemplates")
		}
	case "CronJob":
		return vs.podSpec(u.Object, name, "spec", "jobTemplate", "spec", "template", "spec")
	case "PersistentVolumeClaim":
		return unstructured.SetNestedField(u.Object, "__CG_OPTIONAL_storageClassName__", "spec", "storageClassName")
	case "APIService":
		if v&certManager == 0 {
			return unstructured.SetNestedField(u.Object, "__CG_INCLUDE_caBundle__", "spec", "caBundle")
		}
	}
	return nil
}

// podSpec templatizes the pod spec at path of workload name.
func (vs *values) podSpec(obj map[string]any, name string, path ...string) error {
	spec, ok, err := unstructured.NestedMap(obj, path...)
	if err != nil {
		return fmt.Errorf("the pod spec of %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%s has no pod spec at %s", name, strings.Join(path, "."))
	}
	spec["priorityClassName"] = "__CG_OPTIONAL_priorityClassName__"
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		c := c.(map[string]any)
		image, _ := c["image"].(string)
		repository, tag, _ := strings.Cut(image, ":")
		prefix := ""
		switch repository {
		case serverRepository:
		case etcdRepository:
			prefix = "etcd."
		default:
			continue
		}
		p, err := vs.set("IMAGE", prefix+"image", map[string]any{"repository": repository, "tag": tag, "digest": ""})
		if err != nil {
			return err
		}
		c["image"] = p
		// The servers' resources are values; the snapshot jobs' are not.
		if (name == "clustergate" && c["name"] == "clustergate") || (name == "clustergate-etcd" && c["name"] == "etcd") {
			if p, err = vs.set("BLOCK", prefix+"resources", c["resources"]); err != nil {
				return err
			}
			c["resources"] = p
		}
		// What an overlay patches into the server: its flags
		// (docs/operations.md, "Flags") and the Secrets they name.
		if name == "clustergate" && c["name"] == "clustergate" {
			c["args"] = append(c["args"].([]any), "__CG_LIST_extraArgs__")
			c["volumeMounts"] = append(c["volumeMounts"].([]any), "__CG_LIST_extraVolumeMounts__")
			spec["volumes"] = append(spec["volumes"].([]any), "__CG_LIST_extraVolumes__")
		}
	}
	volumes, _ := spec["volumes"].([]any)
	for _, vol := range volumes {
		v, _ := vol.(map[string]any) // or the placeholder of extraVolumes
		secret, _ := v["secret"].(map[string]any)
		if secret != nil && secret["secretName"] == servingSecret {
			secret["secretName"] = "__CG_INCLUDE_servingSecret__"
		}
	}
	return unstructured.SetNestedMap(obj, spec, path...)
}

// block is the YAML of a default, indented to sit under a key at indent.
func (vs *values) block(path string, indent int) string {
	out, err := yaml.Marshal(vs.defaults[path])
	if err != nil {
		panic(err) // defaults come from decoded YAML
	}
	pad := strings.Repeat(" ", indent)
	return pad + strings.ReplaceAll(strings.TrimSuffix(string(out), "\n"), "\n", "\n"+pad)
}

// image is the default of an image value.
func (vs *values) image(path string) (repository, tag string) {
	m, _ := vs.defaults[path].(map[string]any)
	repository, _ = m["repository"].(string)
	tag, _ = m["tag"].(string)
	return repository, tag
}

// valuesYAML is values.yaml with the artifacts' defaults and the images
// pinned as given.
func (vs *values) valuesYAML(pinned []release.Image) string {
	pin := func(path string) (repository, tag, digest string) {
		repository, tag = vs.image(path)
		for _, p := range pinned {
			if p.Name == repository {
				return p.NewName, tag, p.Digest
			}
		}
		return repository, tag, ""
	}
	server, _, serverDigest := pin("image")
	etcd, etcdTag, etcdDigest := pin("etcd.image")
	return fmt.Sprintf(valuesTemplate, server, serverDigest, vs.block("resources", 2),
		vs.defaults["highAvailability.replicas"], etcd, etcdTag, etcdDigest, vs.block("etcd.resources", 4))
}
