// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package chart generates clustergate's Helm chart (charts/clustergate)
// from the kustomize layouts of artifacts/, so that the chart and the
// manifests cannot drift apart: each combination of the chart's layout
// values (highly available or not, certificates from cert-manager or a
// Secret, monitoring or not) is one kustomize rendering, and every object
// is gated on the values of the renderings that hold it. Values the
// layouts leave to an overlay (images, resources, replicas, priority and
// storage classes, the serving certificate's Secret and caBundle, the
// PodDisruptionBudgets) become values of the chart. hack/chart writes the
// chart (make chart); make release packages it with the images pinned.
package chart
