// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package monitoringartifacts

import (
	"encoding/json"
	"os"
	"regexp"
)

// DashboardQueries returns every query of a Grafana dashboard.
func DashboardQueries(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	var queries []string
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			queries = append(queries, target.Expr)
		}
	}
	return queries, nil
}

// documentedMetric matches a row of the metrics table in the docs.
var documentedMetric = regexp.MustCompile("(?m)^\\| `(clustergate_[a-z0-9_]+)` \\|")

// DocumentedMetrics returns the metrics of the table in the docs.
func DocumentedMetrics(docs string) []string {
	var names []string
	for _, m := range documentedMetric.FindAllStringSubmatch(docs, -1) {
		names = append(names, m[1])
	}
	return names
}
