// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/release"
)

// Namespace is the namespace the artifacts install into; the chart puts
// the release's namespace in its place.
const Namespace = "clustergate-system"

// dimension is a choice of the chart's values that selects kustomize
// resources or components: each variant of the chart is one rendering of
// the artifacts.
type dimension struct {
	// condition is the template expression that is true when the
	// dimension is on.
	condition string
	// resources replace the layout's resources when on; components are
	// added.
	resources, components []string
	// on and off are the helm --set values that turn it on and off.
	on, off string
}

// dimensions are the chart's layout choices, in the order of a variant's
// bits: the highly available layout, certificates from cert-manager, and
// the Prometheus Operator's monitoring.
var dimensions = []dimension{
	{condition: "$.Values.highAvailability.enabled", resources: []string{"overlays/ha"},
		on: "highAvailability.enabled=true", off: "highAvailability.enabled=false"},
	{condition: `eq $.Values.tls.source "cert-manager"`, components: []string{"components/cert-manager"},
		on: "tls.source=cert-manager", off: "tls.source=secret"},
	{condition: "$.Values.monitoring.enabled", components: []string{"monitoring"},
		on: "monitoring.enabled=true", off: "monitoring.enabled=false"},
}

const (
	ha = 1 << iota
	certManager
	monitoring
	variants = 1 << iota
)

// Variant is one combination of the chart's layout values and the
// kustomize layout of artifacts/ the chart renders with them.
type Variant struct {
	// Layout is the kustomize layout.
	Layout release.Layout
	// Set are the values, as helm --set takes them.
	Set []string
	// CertManager is whether the certificates come from cert-manager;
	// without, the APIService's caBundle is a value.
	CertManager bool
}

// Variants are every combination of the chart's layout values.
func Variants() []Variant {
	out := make([]Variant, 0, variants)
	for v := range variants {
		vr := Variant{Layout: layout(v), CertManager: v&certManager != 0}
		for i, d := range dimensions {
			if v&(1<<i) != 0 {
				vr.Set = append(vr.Set, d.on)
			} else {
				vr.Set = append(vr.Set, d.off)
			}
		}
		out = append(out, vr)
	}
	return out
}

// layout is the kustomize layout of variant v.
func layout(v int) release.Layout {
	l := release.Layout{Name: fmt.Sprintf("variant-%d", v), Resources: []string{"."}}
	for i, d := range dimensions {
		if v&(1<<i) == 0 {
			continue
		}
		if d.resources != nil {
			l.Resources = d.resources
		}
		l.Components = append(l.Components, d.components...)
	}
	return l
}

// object is one object of the chart and its rendering in each variant
// (empty where the variant lacks it).
type object struct {
	key       string
	kind      string
	rendering [variants]string
	// condition, if not empty, further gates the object on a value.
	condition string
}

// Options are what a release puts into the chart.
type Options struct {
	// Version is the release's version (vX.Y.Z): the chart's version
	// without the v, its appVersion as is. Empty, the server image's tag
	// in the artifacts.
	Version string
	// Images pin the artifacts' images by digest, as pushed.
	Images []release.Image
}

// Generate renders every variant of the artifacts directory with kubectl
// kustomize and writes the chart into dir: Chart.yaml, values.yaml and
// its schema, the helpers, and one template per kind whose objects are
// each gated on the values that select the variants holding them.
func Generate(ctx context.Context, kubectl, artifacts, dir string, o Options) error {
	artifacts, err := filepath.Abs(artifacts)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "chart-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	objects := map[string]*object{}
	defaults := newValues()
	for v := range variants {
		out, err := release.RenderLayout(ctx, kubectl, artifacts, work, layout(v), nil)
		if err != nil {
			return err
		}
		objs, err := decode(out)
		if err != nil {
			return fmt.Errorf("variant %d: %w", v, err)
		}
		for _, u := range objs {
			if u.GetKind() == "Namespace" && u.GetName() == Namespace {
				continue // the release's namespace: helm install --create-namespace
			}
			if err := defaults.templatize(u, v); err != nil {
				return err
			}
			rendered, err := yaml.Marshal(u.Object)
			if err != nil {
				return err
			}
			key := strings.Join([]string{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}, "/")
			o := objects[key]
			if o == nil {
				o = &object{key: key, kind: u.GetKind()}
				if u.GetKind() == "PodDisruptionBudget" {
					o.condition = "$.Values.podDisruptionBudget.enabled"
				}
				objects[key] = o
			}
			o.rendering[v] = string(rendered)
		}
	}
	version := o.Version
	if version == "" {
		_, version = defaults.image("image")
	}
	files := map[string]string{
		"Chart.yaml":             fmt.Sprintf(chartYAML, strings.TrimPrefix(version, "v"), version),
		".helmignore":            helmignore,
		"values.yaml":            defaults.valuesYAML(o.Images),
		"values.schema.json":     valuesSchema,
		"templates/_helpers.tpl": helpers,
		"templates/NOTES.txt":    notes,
	}
	byKind := map[string][]*object{}
	for _, o := range objects {
		byKind[o.kind] = append(byKind[o.kind], o)
	}
	for kind, objs := range byKind {
		slices.SortFunc(objs, func(a, b *object) int { return strings.Compare(a.key, b.key) })
		var b strings.Builder
		b.WriteString(header)
		for _, o := range objs {
			b.WriteString(o.template())
		}
		files["templates/"+strings.ToLower(kind)+".yaml"] = b.String()
	}
	// Everything but ci/, the golden tests' values files, is generated.
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, e := range entries {
		if e.Name() != "ci" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(files[name]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// header opens every generated template.
const header = "# Generated by hack/chart from the kustomize layouts of artifacts/: edit those and run make chart.\n"

// template is the object's template: each distinct rendering gated on
// the variants that hold it.
func (o *object) template() string {
	byRendering := map[string][]int{}
	var order []string
	for v, r := range o.rendering {
		if r == "" {
			continue
		}
		if _, ok := byRendering[r]; !ok {
			order = append(order, r)
		}
		byRendering[r] = append(byRendering[r], v)
	}
	var b strings.Builder
	if o.condition != "" {
		fmt.Fprintf(&b, "{{- if %s }}\n", o.condition)
	}
	present := 0
	for _, vs := range byRendering {
		present += len(vs)
	}
	for i, r := range order {
		cond := condition(byRendering[r])
		switch {
		case cond == "" && len(order) == 1:
		case i == 0:
			fmt.Fprintf(&b, "{{- if %s }}\n", cond)
		case i == len(order)-1 && present == variants:
			b.WriteString("{{- else }}\n")
		default:
			fmt.Fprintf(&b, "{{- else if %s }}\n", cond)
		}
		b.WriteString("---\n")
		b.WriteString(substitute(r))
	}
	if len(order) > 1 || condition(byRendering[order[0]]) != "" {
		b.WriteString("{{- end }}\n")
	}
	if o.condition != "" {
		b.WriteString("{{- end }}\n")
	}
	return b.String()
}

// condition is the template expression true exactly in the variants vs:
// empty for all of them, else the conjunction of the dimensions they
// share when they are every variant with those, else a disjunction of
// such conjunctions, one per variant.
func condition(vs []int) string {
	if len(vs) == variants {
		return ""
	}
	var fixed []string
	for i, d := range dimensions {
		on := vs[0]&(1<<i) != 0
		same := true
		for _, v := range vs[1:] {
			if (v&(1<<i) != 0) != on {
				same = false
			}
		}
		if same {
			fixed = append(fixed, literal(d, on))
		}
	}
	if len(vs) == variants>>len(fixed) {
		return conjunction(fixed)
	}
	var terms []string
	for _, v := range vs {
		var lits []string
		for i, d := range dimensions {
			lits = append(lits, literal(d, v&(1<<i) != 0))
		}
		terms = append(terms, "("+conjunction(lits)+")")
	}
	return "or " + strings.Join(terms, " ")
}

func literal(d dimension, on bool) string {
	if on {
		return "(" + d.condition + ")"
	}
	return "(not (" + d.condition + "))"
}

func conjunction(lits []string) string {
	if len(lits) == 1 {
		return strings.TrimSuffix(strings.TrimPrefix(lits[0], "("), ")")
	}
	return "and " + strings.Join(lits, " ")
}

// decode splits kubectl kustomize's output into objects.
func decode(out []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// braces are Go template delimiters in the artifacts (Prometheus'
// alert templates, the dashboard's legends), which Helm must print as
// they are.
var braces = regexp.MustCompile(`\{\{|\}\}`)

// substitute escapes a rendering's own braces, then puts the templates
// in place of the placeholders templatize left.
func substitute(r string) string {
	r = braces.ReplaceAllStringFunc(r, func(s string) string { return `{{ "` + s + `" }}` })
	r = strings.ReplaceAll(r, Namespace, "{{ $.Release.Namespace }}")
	for _, p := range placeholders {
		r = p.pattern.ReplaceAllStringFunc(r, func(s string) string { return p.template(p.pattern.FindStringSubmatch(s)) })
	}
	return r
}
