#!/usr/bin/env bash
# Checks the project's shell scripts (hack/, .ci/run) with shellcheck: it must find nothing.
# It is the one checker no Go module provides: Debian's package is
# installed when it is missing, as hack/update-protobuf.sh does for protoc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v shellcheck >/dev/null; then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y -qq shellcheck >/dev/null ||
    { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq shellcheck >/dev/null; }
fi

mapfile -t scripts < <(git ls-files '*.sh' .ci/run)
shellcheck "${scripts[@]}"
