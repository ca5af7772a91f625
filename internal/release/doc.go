// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package release makes the artifacts of a release (make release) that a
// landscape pins and verifies: an SPDX SBOM per image, the install
// manifests of each shipped layout rendered with the images pinned by
// digest, the kubectl plugin's archives with their SHA-256 sums and
// krew manifest, and the OCM component descriptor naming them all by
// digest. hack/release runs it, pushes the images and signs them
// and their SBOMs with cosign; docs/operations.md, "Verifying a release",
// says how they are checked.
package release
