#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite
# (check-megatron: lit + FileCheck). Ends with one line
# "check-megatron: N passed, N failed, N skipped" and exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
# Everything: the tools, the runtime and the unit-test binaries lit runs.
"$root/scripts/build.sh"
# The runtime core alone: no MPI, no BLAS (the backend seam's promise).
"$root/scripts/check-runtime-core.sh" "$build-core"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
/usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$log" || status=$?

# lit pads its labels to the longest one printed ("  Passed     : 81").
count() { sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
passed="$(count Passed)"; passed="${passed:-0}"
failed=0
for kind in Failed Unresolved "Timed Out" "Unexpectedly Passed"; do
  n="$(count "$kind")"; failed=$((failed + ${n:-0}))
done
skipped="$(count Unsupported)"; skipped="${skipped:-0}"
echo "check-megatron: $passed passed, $failed failed, $skipped skipped"
if [ "$passed" -eq 0 ]; then
  echo "check-megatron: no test ran" >&2
  exit 1
fi
exit "$status"
