#!/usr/bin/env bash
# Regenerates the protobuf encoding (hack/update-protobuf.sh), deepcopy,
# defaulters, conversions, OpenAPI definitions with declared model names, and
# the clientset (protobuf first, with watch and apply configurations), listers
# and informers, with k8s.io/code-generator's kube_codegen.sh at the version
# go.mod pins.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"
module=github.com/clustergate/clustergate
# On a fresh machine the module is not in the cache yet.
go mod download k8s.io/code-generator
codegen_pkg=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)

# shellcheck source=/dev/null
source "${codegen_pkg}/kube_codegen.sh"

# First: it adds protobuf tags to the types that the generators below read.
hack/update-protobuf.sh

kube::codegen::gen_helpers \
  --boilerplate hack/boilerplate.go.txt \
  pkg/apis

kube::codegen::gen_openapi \
  --output-dir pkg/generated/openapi \
  --output-pkg "${module}/pkg/generated/openapi" \
  --output-model-name-file zz_generated.model_name.go \
  --report-filename hack/api-rule-violations.list \
  --update-report \
  --boilerplate hack/boilerplate.go.txt \
  pkg/apis

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-openapi-schema <(go run ./pkg/generated/openapi/cmd/models-schema) \
  --output-dir pkg/generated \
  --output-pkg "${module}/pkg/generated" \
  --boilerplate hack/boilerplate.go.txt \
  pkg/apis
