#!/usr/bin/env bash
# Every Go file carries the SPDX license identifier of LICENSE (Apache-2.0)
# in its first lines: hand-written ones as a line comment, generated ones
# through hack/boilerplate.go.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
while IFS= read -r file; do
  head -n 8 "${file}" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("${file}")
done < <(git ls-files --cached --others --exclude-standard '*.go')
if (( ${#missing[@]} > 0 )); then
  echo "Go files without 'SPDX-License-Identifier: Apache-2.0' in their first 8 lines:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
