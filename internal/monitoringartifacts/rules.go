// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package monitoringartifacts reads what artifacts/monitoring ships, for the
// local control plane's Prometheus and for the tests: the PrometheusRule,
// whose groups it writes as a Prometheus rules file, as the Prometheus
// Operator does; the dashboard's queries; and the metrics docs/monitoring.md
// lists. test/monitoring checks those artifacts with the pinned promtool.
package monitoringartifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Files of artifacts/monitoring and the docs, relative to the repository's
// root.
var (
	RuleFile      = filepath.Join("artifacts", "monitoring", "prometheusrule.yaml")
	DashboardFile = filepath.Join("artifacts", "monitoring", "dashboard.json")
	DocsFile      = filepath.Join("docs", "monitoring.md")
)

// PrometheusRule is a monitoring.coreos.com/v1 PrometheusRule, with the
// fields of its rules that clustergate uses.
type PrometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       Spec              `json:"spec"`
}

// Spec holds the rule groups, which are what Prometheus reads.
type Spec struct {
	Groups []Group `json:"groups"`
}

// Group is a group of rules evaluated together.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is a recording rule (Record) or an alert (Alert).
type Rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Read reads a PrometheusRule strictly: a misspelt field is an error, not
// a rule quietly missing its annotations or its duration.
func Read(path string) (*PrometheusRule, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r PrometheusRule
	if err := UnmarshalStrict(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.APIVersion != "monitoring.coreos.com/v1" || r.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s: a %s %s, not a monitoring.coreos.com/v1 PrometheusRule", path, r.APIVersion, r.Kind)
	}
	return &r, nil
}

// Alerts returns the rule's alerts.
func (r *PrometheusRule) Alerts() []Rule {
	var alerts []Rule
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert != "" {
				alerts = append(alerts, rule)
			}
		}
	}
	return alerts
}

// WriteRulesFile writes the groups as a Prometheus rules file, in JSON,
// which is YAML too.
func (r *PrometheusRule) WriteRulesFile(path string) error {
	raw, err := json.MarshalIndent(r.Spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// UnmarshalStrict decodes YAML or JSON into v and fails on a field v does
// not have.
func UnmarshalStrict(raw []byte, v any) error {
	j, err := yaml.ToJSON(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// rangeSelector matches a range or subquery selector of an expression:
// [5m], [1h:30s], [30m:]; not a character class in a regular expression's
// label value, which does not start with a digit and a unit.
var rangeSelector = regexp.MustCompile(`\[(\d+[a-z][0-9a-z]*)(:(\d+[a-z][0-9a-z]*)?)?\]`)

// Compressed returns the rules with time running factor times faster:
// every `for`, `keep_firing_for` and range in an expression is divided by
// factor. Durations written as numbers in an expression (`time() - x > 300`)
// are not, so alerts built on those take their real time. The e2e tests
// use it to see alerts fire in seconds; the rule unit tests check the real
// durations.
func (r *PrometheusRule) Compressed(factor int) (*PrometheusRule, error) {
	out := *r
	out.Spec.Groups = nil
	for _, g := range r.Spec.Groups {
		var err error
		if g.Interval, err = divide(g.Interval, factor); err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		rules := make([]Rule, len(g.Rules))
		for i, rule := range g.Rules {
			if rule.For, err = divide(rule.For, factor); err != nil {
				return nil, fmt.Errorf("rule %s%s: %w", rule.Alert, rule.Record, err)
			}
			if rule.KeepFiringFor, err = divide(rule.KeepFiringFor, factor); err != nil {
				return nil, fmt.Errorf("rule %s%s: %w", rule.Alert, rule.Record, err)
			}
			var exprErr error
			rule.Expr = rangeSelector.ReplaceAllStringFunc(rule.Expr, func(sel string) string {
				m := rangeSelector.FindStringSubmatch(sel)
				window, err := divide(m[1], factor)
				if err != nil {
					exprErr = err
					return sel
				}
				if m[2] == "" {
					return "[" + window + "]"
				}
				step, err := divide(m[3], factor)
				if err != nil {
					exprErr = err
				}
				return "[" + window + ":" + step + "]"
			})
			if exprErr != nil {
				return nil, fmt.Errorf("rule %s%s: %w", rule.Alert, rule.Record, exprErr)
			}
			rules[i] = rule
		}
		g.Rules = rules
		out.Spec.Groups = append(out.Spec.Groups, g)
	}
	return &out, nil
}

// durationUnits are Prometheus' duration units.
var durationUnits = map[string]time.Duration{
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
	"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour,
}

// durationPart is one number and unit of a duration; "ms" is tried before
// "m".
var durationPart = regexp.MustCompile(`^(\d+)(ms|s|m|h|d|w|y)`)

// ParseDuration parses a Prometheus duration such as 1h30m or 500ms.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var total time.Duration
	for rest := s; rest != ""; {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, err
		}
		total += time.Duration(n) * durationUnits[m[2]]
		rest = strings.TrimPrefix(rest, m[0])
	}
	return total, nil
}

// formatDuration writes d as a Prometheus duration.
func formatDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// divide divides a Prometheus duration by factor; empty stays empty.
func divide(s string, factor int) (string, error) {
	if s == "" {
		return "", nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return "", err
	}
	scaled := d / time.Duration(factor)
	if scaled < time.Millisecond {
		return "", fmt.Errorf("%s divided by %d is below a millisecond", s, factor)
	}
	return formatDuration(scaled.Truncate(time.Millisecond)), nil
}
