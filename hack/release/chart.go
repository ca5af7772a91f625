// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/clustergate/clustergate/internal/chart"
	"github.com/clustergate/clustergate/internal/release"
)

// chartRelease is the released Helm chart: its archive under chart/, and
// the OCI reference and digest it was pushed as.
type chartRelease struct {
	Archive   string `json:"archive"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// tag is Reference parsed.
	tag name.Tag
}

// releaseChart publishes the chart generated from artifacts/ with the
// version and the pushed images pinned into chart/ and registry.
func releaseChart(ctx context.Context, o options, registry, helm string, pinned []release.Image) (chartRelease, error) {
	p, err := chart.Publish(ctx, helm, "kubectl", filepath.Join(o.root, "artifacts"), filepath.Join(o.output, "chart"),
		filepath.Join(o.output, "work", "chart"), registry, loopback(registry), chart.Options{Version: o.version, Images: pinned})
	if err != nil {
		return chartRelease{}, err
	}
	archive, err := filepath.Rel(o.output, p.Archive)
	if err != nil {
		return chartRelease{}, err
	}
	return chartRelease{Archive: archive, Reference: p.Tag.String(), Digest: p.Digest, tag: p.Tag}, nil
}

// loopback tells a registry on this machine, which serves plain HTTP as
// the release's own and make registry's do, from one a landscape runs.
func loopback(registry string) bool {
	host, _, _ := strings.Cut(registry, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
