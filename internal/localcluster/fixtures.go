// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"os"
	"strings"
	"text/template"
)

// fixtures are the objects the control plane applies, as templates filled
// from values: the shoot's RBAC and node, Gardener's APIServices, Project,
// CloudProfile and Shoot, and clustergate's Service.
//
//go:embed fixtures/*.yaml
var fixtures embed.FS

// values fill the fixture templates.
type values struct {
	Project, Shoot                      string
	ShootServingCA                      string
	ShootClientCACert, ShootClientCAKey string
	GardenerPort, ClustergatePort       int
	// GardenerAddress, when set, is the non-loopback address
	// gardener-apiserver listens on, for aggregator routing.
	GardenerAddress       string
	GardenerGroupVersions []struct{ Group, Version string }
	AggregatedCABundle    string
	NodeName              string
}

// applyFixture fills the template fixtures/name and applies it to the
// cluster of kubeconfig.
func (cp *ControlPlane) applyFixture(ctx context.Context, kubeconfig, name string) error {
	return cp.applyFixtureWith(ctx, kubeconfig, name, cp.values)
}

// applyFixtureWith is applyFixture with the template filled from v.
func (cp *ControlPlane) applyFixtureWith(ctx context.Context, kubeconfig, name string, v values) error {
	tmpl, err := template.New(name).Funcs(template.FuncMap{
		"indent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
		},
	}).ParseFS(fixtures, "fixtures/"+name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, v); err != nil {
		return err
	}
	_, err = cp.Kubectl(ctx, kubeconfig, buf.Bytes(), "apply", "-f", "-")
	return err
}

// base64File is the content of a file the control plane wrote itself, in
// base64, for a fixture.
func base64File(path string) string {
	b, _ := os.ReadFile(path)
	return base64.StdEncoding.EncodeToString(b)
}
