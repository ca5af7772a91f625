#!/usr/bin/env bash
# `make run`: builds the pinned tools (once; minutes on a cold machine) and
# clustergate, then runs the local control plane in the foreground until
# Ctrl-C. Everything listens on 127.0.0.1 only.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

hack/tools/build.sh
go build -o _output/bin/clustergate-apiserver ./cmd/clustergate-apiserver
go build -o _output/bin/local-up ./hack/local-up
exec _output/bin/local-up "$@"
