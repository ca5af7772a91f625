#!/usr/bin/env bash
# Prints the path of a garden kubeconfig for user NAME in the given groups,
# for the control plane that `make run` started. Example:
#   kubectl --kubeconfig "$(hack/local-user.sh alice)" get sessions
# Usage: hack/local-user.sh NAME [GROUP...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"
go run ./hack/local-user "$@"
