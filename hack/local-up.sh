#!/usr/bin/env bash
# `make run`: builds the pinned tools (once; minutes on a cold machine) and
# clustergate, then runs the local control plane in the foreground until
# Ctrl-C. Everything listens on 127.0.0.1 only. With PROMETHEUS=1, also a
# Prometheus with the rules of artifacts/monitoring. With INSTALLED=1 (root),
# clustergate runs the installed way: artifacts/overlays/ha with the
# cert-manager component applied with kubectl apply -k, its pods on the
# process node, the images of make images from a registry on 127.0.0.1:5000.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

args=()
if [[ -n "${INSTALLED:-}" && "${INSTALLED}" != 0 ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "INSTALLED=1 make run needs root: the process node runs each pod in a network namespace of its own; use make run without it" >&2
    exit 1
  fi
  hack/tools/build.sh etcd kube gardener node process-kubelet cert-manager
  go run -tags=fieldsv1string ./hack/images
  args+=(-installed)
else
  hack/tools/build.sh etcd kube gardener node
fi
# PROMETHEUS=1 make run: also Prometheus with the rules of artifacts/monitoring.
if [[ -n "${PROMETHEUS:-}" && "${PROMETHEUS}" != 0 ]]; then
  hack/tools/build.sh prometheus
  args+=(-prometheus)
fi
go build -tags=fieldsv1string -o _output/bin/clustergate-apiserver ./cmd/clustergate-apiserver
go build -o _output/bin/kubectl-session ./cmd/kubectl-session
go build -o _output/bin/local-up ./hack/local-up
exec _output/bin/local-up "${args[@]}" "$@"
