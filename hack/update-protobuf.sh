#!/usr/bin/env bash
# Regenerates the protobuf encoding of the versioned API (generated.proto,
# generated.pb.go and the protobuf struct tags of types.go) with Kubernetes'
# own go-to-protobuf, the tool that generates the encoding of the built-in
# resources.
#
# go-to-protobuf runs protoc, which no Go module provides: it comes from
# Debian's protobuf-compiler, installed here when missing so that a fresh
# machine needs nothing by hand. go-to-protobuf, protoc-gen-gogo and goimports
# are the tool versions go.mod pins.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"
module=github.com/clustergate/clustergate
packages=("${module}/pkg/apis/clustergate/v1alpha1")

ensure_protoc() {
  command -v protoc >/dev/null && [[ -f /usr/include/google/protobuf/descriptor.proto ]] && return
  echo "installing protoc (Debian: protobuf-compiler, libprotobuf-dev)" >&2
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y -qq protobuf-compiler libprotobuf-dev >/dev/null ||
    { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq protobuf-compiler libprotobuf-dev >/dev/null; }
}
ensure_protoc

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

go build -o "${tmp}/bin/" k8s.io/code-generator/cmd/go-to-protobuf \
  k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo golang.org/x/tools/cmd/goimports

# protoc finds .proto files by import path, so it gets a GOPATH-shaped tree:
# this module where it stands, and the imported protos from the module cache.
src="${tmp}/src"
link() {
  mkdir -p "$(dirname "${src}/$1")"
  ln -s "$2" "${src}/$1"
}
link "${module}" "${root}"
go mod download k8s.io/apimachinery github.com/gogo/protobuf
link k8s.io/apimachinery "$(go list -m -f '{{.Dir}}' k8s.io/apimachinery)"
link github.com/gogo/protobuf "$(go list -m -f '{{.Dir}}' github.com/gogo/protobuf)"

# apimachinery's packages are imported, never regenerated ("-" prefix).
apimachinery=(
  -k8s.io/apimachinery/pkg/util/intstr
  -k8s.io/apimachinery/pkg/api/resource
  -k8s.io/apimachinery/pkg/runtime/schema
  -k8s.io/apimachinery/pkg/runtime
  -k8s.io/apimachinery/pkg/apis/meta/v1
)
PATH="${tmp}/bin:${PATH}" "${tmp}/bin/go-to-protobuf" \
  --go-header-file hack/boilerplate.go.txt \
  --output-dir "${src}" \
  --proto-import "${src}" \
  --proto-import /usr/include \
  --apimachinery-packages "$(IFS=,; echo "${apimachinery[*]}")" \
  --packages "$(IFS=,; echo "${packages[*]}")"
