#!/usr/bin/env bash
# Fails when the committed generated code differs from what
# hack/update-codegen.sh produces now.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

# Generate into a copy of the tree so that the working tree stays untouched.
git -C "${root}" ls-files -co --exclude-standard -z | (cd "${root}" && tar --null -T - -cf -) | (cd "${tmp}" && tar -xf -)
(cd "${tmp}" && hack/update-codegen.sh)
if ! diff -Naupr "${root}/pkg" "${tmp}/pkg" >"${tmp}/diff" || ! diff -Nau "${root}/hack/api-rule-violations.list" "${tmp}/hack/api-rule-violations.list" >>"${tmp}/diff"; then
  cat "${tmp}/diff"
  echo "generated code is out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "generated code is up to date"
