#!/usr/bin/env bash
# phase.sh start|end NAME prints when a phase of make starts and, at its
# end, how long it took, so that the CI log shows where a run's time goes.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/_output/phases"
mkdir -p "${dir}"
case $1 in
  start)
    date +%s >"${dir}/$2"
    echo "=== phase $2: started at $(date -u +%T)"
    ;;
  end)
    echo "=== phase $2: done in $(($(date +%s) - $(cat "${dir}/$2")))s"
    ;;
  *)
    echo "usage: $0 start|end NAME" >&2
    exit 2
    ;;
esac
