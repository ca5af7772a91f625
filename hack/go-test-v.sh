#!/usr/bin/env bash
# go-test-v.sh NAME ARGS... runs go test -v ARGS (with $GO, go by default),
# keeping its whole output in _output/NAME.log as well. When it fails, it
# repeats at the end what each failed test logged, so that a CI log cut to
# its tail still says why every failed test failed, not only the last one.
set -euo pipefail
log="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/_output/$1.log"
shift
mkdir -p "$(dirname "${log}")"
rc=0
"${GO:-go}" test -v "$@" 2>&1 | tee "${log}" || rc=$?
if [ "${rc}" -ne 0 ]; then
  echo "=== go-test-v.sh: what each failed test logged (the whole output: ${log})"
  # Top-level tests that failed, then each one's log lines (file:line:
  # messages and subtest results) between its RUN and its FAIL, the last 40.
  sed -n 's/^--- FAIL: \([^ ]*\) .*/\1/p' "${log}" | while read -r name; do
    echo "--- ${name}"
    awk -v name="${name}" '
      $0 == "=== RUN   " name { on = 1; next }
      on && index($0, "--- FAIL: " name " ") == 1 { on = 0 }
      on && /^ *(--- |[A-Za-z0-9_]+\.go:[0-9]+: )/ { print }
    ' "${log}" | tail -n 40
  done
fi
exit "${rc}"
