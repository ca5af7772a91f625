// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package images assembles the images users install, clustergate-apiserver
// and the pinned etcd, from static binaries with go-containerregistry: no
// container runtime, no base image, no shell. Both run as the numeric user
// 65532, carry OCI labels and a CA bundle, and are written to an OCI image
// layout (make images: _output/images/oci) and pushed from there to a
// registry, such as internal/localregistry's. hack/images is the command;
// the tests here read the images back from a registry.
package images
