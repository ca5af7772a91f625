#!/usr/bin/env bash
# `make run`: builds the pinned tools (once; minutes on a cold machine) and
# clustergate, then runs the local control plane in the foreground until
# Ctrl-C. Everything listens on 127.0.0.1 only. With PROMETHEUS=1, also a
# Prometheus with the rules of artifacts/monitoring.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

hack/tools/build.sh etcd kube gardener node
args=()
# PROMETHEUS=1 make run: also Prometheus with the rules of artifacts/monitoring.
if [[ -n "${PROMETHEUS:-}" && "${PROMETHEUS}" != 0 ]]; then
  hack/tools/build.sh prometheus
  args+=(-prometheus)
fi
go build -tags=fieldsv1string -o _output/bin/clustergate-apiserver ./cmd/clustergate-apiserver
go build -o _output/bin/kubectl-session ./cmd/kubectl-session
go build -o _output/bin/local-up ./hack/local-up
exec _output/bin/local-up "${args[@]}" "$@"
