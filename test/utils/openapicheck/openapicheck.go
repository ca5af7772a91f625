// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package openapicheck checks an OpenAPI v2 document as served at
// /openapi/v2: that every reference resolves and that model names are
// declared ones, not Go import paths.
package openapicheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Problems lists what is wrong with doc: references that resolve to no
// definition or parameter, and definitions named after Go paths. Only
// definitions whose names start with prefix are looked into; an empty
// prefix looks into the whole document.
func Problems(doc []byte, prefix string) ([]string, error) {
	var swagger struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		Parameters  map[string]json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(doc, &swagger); err != nil {
		return nil, err
	}
	targets := map[string]map[string]json.RawMessage{"#/definitions/": swagger.Definitions, "#/parameters/": swagger.Parameters}
	resolves := func(ref string) bool {
		for p, m := range targets {
			if name, ok := strings.CutPrefix(ref, p); ok {
				_, found := m[name]
				return found
			}
		}
		return false
	}

	var problems []string
	scope := []json.RawMessage{doc}
	if prefix != "" {
		scope = nil
		for name, def := range swagger.Definitions {
			if strings.HasPrefix(name, prefix) {
				scope = append(scope, def)
			}
		}
	}
	for _, part := range scope {
		for _, ref := range refs(part) {
			if !resolves(ref) {
				problems = append(problems, "broken reference "+ref)
			}
		}
	}
	for name := range swagger.Definitions {
		if strings.Contains(name, "github.com") || strings.Contains(name, "/") {
			problems = append(problems, fmt.Sprintf("definition named after a Go path: %s", name))
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// refs returns every "$ref" value in a JSON document.
func refs(raw []byte) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "$ref" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var doc any
	_ = json.Unmarshal(raw, &doc)
	walk(doc)
	return out
}
