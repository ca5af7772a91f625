// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command chart writes the Helm chart generated from artifacts/ into
// charts/clustergate (make chart); internal/chart's test fails while the
// committed chart differs from what it generates.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clustergate/clustergate/internal/chart"
)

func main() {
	artifacts := flag.String("artifacts", "artifacts", "the kustomize layouts")
	output := flag.String("output", "charts/clustergate", "the chart's directory, replaced")
	flag.Parse()
	if err := chart.Generate(context.Background(), "kubectl", *artifacts, *output, chart.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}
