#!/usr/bin/env bash
# Builds the pinned test tools (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, gardener-apiserver, prometheus with promtool, and
# versitygw, the S3 server the e2e tests keep recordings in) and the linter
# `make verify` runs (lint: golangci-lint), each from its own Go module
# under hack/tools/<set>/, and the project's own nodes, each its own module
# under test/tools/<set>/: node, the stand-in kubelet, and process-kubelet,
# the node that runs images as processes. cert-manager (its controller and
# CA injector, and its CRDs in cert-manager-crds/), cosign (make release
# signs with it), helm (it packages the chart) and krew (the release test
# installs the plugin with it) are built when asked for.
#
# Every module these sets build is at one version across them and the
# project (hack/verify-tool-versions, in make verify): the build cache then
# compiles k8s.io, grpc, otel and golang.org/x once for all sets, not once
# per set. Cold, in .ci/run's background beside make verify and the unit
# tests, the sets took 1,361 s of building in all (kube 380, prometheus 270,
# lint 173, gardener 159, cosign 141, helm 92, versitygw 49, etcd 35,
# cert-manager 30, process-kubelet 19, krew 12, node 1) where they had taken
# 3,828 s before the versions were aligned (gardener 738, kube 669, cosign
# 623, process-kubelet 447, prometheus 377, helm 282, cert-manager 247,
# versitygw 230, lint 104, etcd 65, krew 46).
#
# A build lands in _output/tools/<set>-<key>/, where <key> hashes the set's
# module files and the Go version, so a build is reused until a pin changes.
# (test/tools/istio-authz is a test module, not a set: make test-istio.)
# _output/bin/ holds links to the current builds.
#
# Usage: hack/tools/build.sh [SET...]   (default: the test tools, all sets but
# lint, which `make verify` builds, cert-manager, cosign, helm and krew)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="${root}/_output"
mkdir -p "${out}/tools" "${out}/bin"

# component_base_ldflags VERSION prints the ldflags that make a binary built
# from a module report VERSION instead of v0.0.0-master.
component_base_ldflags() {
  local version=$1 major minor
  major=${version#v}; major=${major%%.*}
  minor=${version#v*.}; minor=${minor%%.*}
  local p=k8s.io/component-base/version
  echo "-s -w -X ${p}.gitVersion=${version} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
}

# module_version SET MODULE prints the version of MODULE the set's go.mod requires.
module_version() {
  (cd "${root}/hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

build_set() {
  local set=$1 dir="${root}/hack/tools/$1" key dest
  [[ -d "${dir}" ]] || dir="${root}/test/tools/$1"
  key=$( { go version; find "${dir}" -maxdepth 1 -type f -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -c1-12)
  dest="${out}/tools/${set}-${key}"
  # One build of a set at a time: .ci/run builds the tools in the
  # background while make builds what it needs, and a second build.sh of
  # the same set waits here for the first, then finds it complete.
  local lock
  exec {lock}>"${out}/tools/${set}.lock"
  flock "${lock}"
  if [[ ! -f "${dest}/.complete" ]]; then
    echo "building ${set} tools into ${dest} (cold builds take minutes)" >&2
    rm -rf "${dest}" && mkdir -p "${dest}"
    local start=${SECONDS}
    case "${set}" in
      etcd)
        # Static (no cgo), since the etcd image (make images) has no libc;
        # etcdctl (snapshot save) and etcdutl (snapshot restore) at the same
        # pinned version, the tool directives of hack/tools/etcd/go.mod.
        (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dest}/" \
          . go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3)
        ;;
      versitygw)
        # Its own cmd builds as is (the tool directive of go.mod); a cold
        # build takes a few minutes, most of it the AWS SDK it serves with.
        (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dest}/" github.com/versity/versitygw/cmd/versitygw)
        ;;
      cosign)
        # make release signs and attests with it; the release test
        # verifies. release-utils carries the version cosign reports.
        local version
        version=$(module_version cosign github.com/sigstore/cosign/v3)
        (cd "${dir}" && CGO_ENABLED=0 go build -trimpath \
          -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=${version}" \
          -o "${dest}/" github.com/sigstore/cosign/v3/cmd/cosign)
        ;;
      helm)
        # make release packages and pushes the chart with it; the chart and
        # install tests render and install it. internal/version carries the
        # version helm reports.
        local version
        version=$(module_version helm helm.sh/helm/v4)
        (cd "${dir}" && CGO_ENABLED=0 go build -trimpath \
          -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${version}" \
          -o "${dest}/" helm.sh/helm/v4/cmd/helm)
        ;;
      krew)
        # The release test installs the plugin with it.
        (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dest}/" sigs.k8s.io/krew/cmd/krew)
        ;;
      node | process-kubelet)
        (cd "${dir}" && go build -trimpath -ldflags "-s -w" -o "${dest}/${set}" .)
        ;;
      kube)
        local flags
        flags=$(component_base_ldflags "$(module_version kube k8s.io/kubernetes)")
        (cd "${dir}" && go build -trimpath -ldflags "${flags}" -o "${dest}/" \
          k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
          k8s.io/kubernetes/cmd/kube-scheduler)
        ;;
      gardener)
        local flags
        flags=$(component_base_ldflags "$(module_version gardener github.com/gardener/gardener)")
        (cd "${dir}" && go build -trimpath -ldflags "${flags}" -o "${dest}/" \
          github.com/gardener/gardener/cmd/gardener-apiserver)
        ;;
      prometheus)
        # Module version v0.3MM.P is Prometheus release 3.MM.P.
        local version p=github.com/prometheus/common/version
        version=$(module_version prometheus github.com/prometheus/prometheus)
        local release=${version#v0.3}
        version="3.$((10#${release%%.*})).${release#*.}"
        (cd "${dir}" && go build -trimpath -tags remove_all_sd -ldflags "-s -w -X ${p}.Version=${version}" -o "${dest}/" \
          github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
        ;;
      cert-manager)
        # cert-manager's controllers and CA injector in one command
        # (cert-manager controller|cainjector; main.go says why not
        # cert-manager's own cmd/), and the CRDs the module ships
        # (deploy/crds), which artifacts/components/cert-manager needs.
        local version
        version=$(module_version cert-manager github.com/cert-manager/cert-manager)
        (cd "${dir}" && go build -trimpath \
          -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${version}" \
          -o "${dest}/cert-manager" . &&
          mkdir -p "${dest}/cert-manager-crds" &&
          cp "$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)"/deploy/crds/*.yaml "${dest}/cert-manager-crds/")
        ;;
      lint)
        # Setting main.date makes `golangci-lint version` report the pinned
        # module version rather than the lint module's "(devel)".
        local version
        version=$(module_version lint github.com/golangci/golangci-lint/v2)
        (cd "${dir}" && go build -trimpath \
          -ldflags "-s -w -X main.version=${version#v} -X main.commit=module -X main.date=1970-01-01T00:00:00Z" \
          -o "${dest}/" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
        ;;
      *)
        echo "unknown tool set ${set}" >&2
        return 1
        ;;
    esac
    touch "${dest}/.complete"
    echo "built ${set} in $((SECONDS - start))s" >&2
  fi
  local bin
  for bin in "${dest}"/*; do
    ln -sfn "${bin}" "${out}/bin/$(basename "${bin}")"
  done
  exec {lock}>&-
}

sets=("$@")
[[ ${#sets[@]} -gt 0 ]] || sets=(etcd kube gardener node process-kubelet prometheus versitygw)
for s in "${sets[@]}"; do
  build_set "${s}"
done
