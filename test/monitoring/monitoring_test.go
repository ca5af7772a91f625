// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package monitoring checks artifacts/monitoring with the pinned promtool
// and kubectl's kustomize: the rules pass promtool's checks and their unit
// tests, every alert is unit-tested and has a runbook, the component builds
// into what the Prometheus Operator needs, and the dashboard asks only for
// metrics that exist. `make test-monitoring` builds promtool first.
package monitoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clustergate/clustergate/internal/monitoringartifacts"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var root string

func TestMain(m *testing.M) {
	// go test runs in the package's directory; file names in the binary
	// are module paths (make builds with -trimpath).
	var err error
	if root, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring:", err)
		os.Exit(1)
	}
	if _, err := os.Stat(promtool()); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring: promtool is missing: run `make test-monitoring`, which builds it")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func promtool() string { return filepath.Join(root, "_output", "bin", "promtool") }

func monitoringDir() string { return filepath.Join(root, "artifacts", "monitoring") }

func readRule(t *testing.T) *monitoringartifacts.PrometheusRule {
	t.Helper()
	r, err := monitoringartifacts.Read(filepath.Join(root, monitoringartifacts.RuleFile))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rulesDir writes the rule's groups as rules.yaml into a new directory,
// next to copies of the rule unit tests, which name it so.
func rulesDir(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := readRule(t).WriteRulesFile(filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	tests, err := filepath.Glob(filepath.Join(monitoringDir(), "tests", "*.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule unit tests in %s: %v", filepath.Join(monitoringDir(), "tests"), err)
	}
	var names []string
	for _, src := range tests {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(src))
	}
	return dir, names
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
}

func TestPromtoolCheckRules(t *testing.T) {
	dir, _ := rulesDir(t)
	run(t, dir, promtool(), "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
}

func TestPromtoolTestRules(t *testing.T) {
	dir, tests := rulesDir(t)
	run(t, dir, promtool(), append([]string{"test", "rules"}, tests...)...)
}

// unitTests is what the rule unit tests say about alerts.
type unitTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertIsUnitTested: each alert has a case where it fires and one
// where it does not, so that neither a broken expression nor one that is
// always true passes unnoticed.
func TestEveryAlertIsUnitTested(t *testing.T) {
	firing, quiet := map[string]bool{}, map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(monitoringDir(), "tests", "*.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var u unitTests
		if err := utilyaml.Unmarshal(raw, &u); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, test := range u.Tests {
			for _, a := range test.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	for _, a := range readRule(t).Alerts() {
		if !firing[a.Alert] {
			t.Errorf("%s has no unit test in which it fires", a.Alert)
		}
		if !quiet[a.Alert] {
			t.Errorf("%s has no unit test in which it stays quiet", a.Alert)
		}
	}
}

// runbookBase is where every alert's runbook_url points, plus the anchor of
// its section.
const runbookBase = "https://github.com/clustergate/clustergate/blob/main/docs/monitoring.md#"

func TestEveryAlertHasARunbook(t *testing.T) {
	docs := readDocs(t)
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(docs, -1) {
		anchors[anchor(m[1])] = true
	}
	for _, a := range readRule(t).Alerts() {
		t.Run(a.Alert, func(t *testing.T) {
			if s := a.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("severity %q, want critical, warning or info", s)
			}
			for _, k := range []string{"summary", "description"} {
				if strings.TrimSpace(a.Annotations[k]) == "" {
					t.Errorf("no %s", k)
				}
			}
			section, ok := strings.CutPrefix(a.Annotations["runbook_url"], runbookBase)
			if !ok || section != anchor(a.Alert) {
				t.Errorf("runbook_url %q, want %s%s", a.Annotations["runbook_url"], runbookBase, anchor(a.Alert))
			}
			if !anchors[section] {
				t.Errorf("docs/monitoring.md has no section %q", section)
			}
		})
	}
}

// anchor is GitHub's anchor of a Markdown heading.
func anchor(heading string) string {
	return strings.ReplaceAll(regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

func readDocs(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, monitoringartifacts.DocsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestComponent builds artifacts/ with the monitoring component, as an
// overlay would, and checks that the ServiceMonitor reaches the server: it
// selects the Service, names one of its ports, sends the token of an
// identity that may read /metrics, and trusts the serving certificate's CA.
func TestComponent(t *testing.T) {
	overlay := t.TempDir()
	// kustomize takes relative paths only.
	artifacts, err := filepath.Rel(overlay, filepath.Join(root, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("resources:\n- %s\ncomponents:\n- %s\n", artifacts, filepath.Join(artifacts, "monitoring"))
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("kubectl", "kustomize", overlay)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v: %s", err, stderr.String())
	}
	objects := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		objects[str(obj, "kind")+"/"+str(obj, "metadata", "name")] = obj
	}
	get := func(key string) map[string]any {
		t.Helper()
		obj, ok := objects[key]
		if !ok {
			t.Fatalf("the component's build has no %s", key)
		}
		return obj
	}

	monitor, service := get("ServiceMonitor/clustergate"), get("Service/clustergate")
	for k, v := range field(monitor, "spec", "selector", "matchLabels").(map[string]any) {
		if str(service, "metadata", "labels", k) != v {
			t.Errorf("the ServiceMonitor selects %s=%v, the Service has labels %v", k, v, field(service, "metadata", "labels"))
		}
	}
	endpoint := field(monitor, "spec", "endpoints").([]any)[0].(map[string]any)
	var ports []string
	for _, p := range field(service, "spec", "ports").([]any) {
		ports = append(ports, str(p.(map[string]any), "name"))
	}
	if !slices.Contains(ports, str(endpoint, "port")) {
		t.Errorf("the ServiceMonitor scrapes port %q, the Service has %v", str(endpoint, "port"), ports)
	}
	token := get("Secret/" + str(endpoint, "authorization", "credentials", "name"))
	account := str(token, "metadata", "annotations", "kubernetes.io/service-account.name")
	if str(token, "type") != "kubernetes.io/service-account-token" || account == "" {
		t.Errorf("the scrape token's Secret is no ServiceAccount token: %v", token)
	}
	get("ServiceAccount/" + account)
	binding := get("ClusterRoleBinding/clustergate:metrics-reader")
	subject := field(binding, "subjects").([]any)[0].(map[string]any)
	if str(subject, "kind") != "ServiceAccount" || str(subject, "name") != account {
		t.Errorf("the metrics reader binding is for %v, not ServiceAccount %s", subject, account)
	}
	role := get("ClusterRole/" + str(binding, "roleRef", "name"))
	rule := field(role, "rules").([]any)[0].(map[string]any)
	if fmt.Sprint(rule["nonResourceURLs"]) != "[/metrics]" || fmt.Sprint(rule["verbs"]) != "[get]" {
		t.Errorf("the metrics reader may %v %v, want get /metrics only", rule["verbs"], rule["nonResourceURLs"])
	}
	servingSecret := ""
	for _, v := range field(get("Deployment/clustergate"), "spec", "template", "spec", "volumes").([]any) {
		if name := str(v.(map[string]any), "secret", "secretName"); strings.Contains(name, "serving") {
			servingSecret = name
		}
	}
	if ca := str(endpoint, "tlsConfig", "ca", "secret", "name"); ca == "" || ca != servingSecret {
		t.Errorf("the ServiceMonitor trusts the CA in Secret %q, the server serves with %q", ca, servingSecret)
	}

	rule2 := get("PrometheusRule/clustergate")
	if n := len(field(rule2, "spec", "groups").([]any)); n != len(readRule(t).Spec.Groups) {
		t.Errorf("the built monitoringartifacts.PrometheusRule has %d groups, the file %d", n, len(readRule(t).Spec.Groups))
	}
	dashboard := get("ConfigMap/clustergate-dashboard")
	if str(dashboard, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Errorf("the dashboard's ConfigMap lacks the label grafana_dashboard=1 that Grafana's sidecar looks for")
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(str(dashboard, "data", "clustergate.json")), &d); err != nil {
		t.Errorf("the dashboard in the ConfigMap is no JSON: %v", err)
	}
}

// field follows path through nested maps; nil where it ends.
func field(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(obj map[string]any, path ...string) string {
	s, _ := field(obj, path...).(string)
	return s
}

// metricName matches the names of clustergate's metrics and recording rules
// in a query.
var metricName = regexp.MustCompile(`[a-z_]*:?clustergate_[a-z0-9_]+(:[a-z0-9_]+)?`)

// TestDashboardAsksForKnownMetrics: every series a dashboard query names is
// a metric of the docs' table (or a histogram's series of one) or a
// recording rule.
func TestDashboardAsksForKnownMetrics(t *testing.T) {
	known := map[string]bool{}
	for _, m := range monitoringartifacts.DocumentedMetrics(readDocs(t)) {
		for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
			known[m+suffix] = true
		}
	}
	for _, g := range readRule(t).Spec.Groups {
		for _, r := range g.Rules {
			known[r.Record] = r.Record != ""
		}
	}
	queries, err := monitoringartifacts.DashboardQueries(filepath.Join(root, monitoringartifacts.DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			if !known[name] {
				t.Errorf("the dashboard asks for %s, which is neither a documented metric nor a recording rule: %s", name, q)
			}
		}
	}
}
