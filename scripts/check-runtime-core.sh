#!/usr/bin/env bash
# The runtime core builds, and its unit tests pass, with neither MPI nor
# BLAS: the runtime configured alone (cmake -S runtime) without the CPU
# backend (MPI's and BLAS's package searches disabled besides, should a
# later change search for them outside it), and no core object file
# reaching for an MPI or BLAS symbol: that check is the proof. Backends bring their own libraries
# (issue 12: the core is what every backend shares).
#
# Usage: scripts/check-runtime-core.sh [BUILD_DIR]   (default: build-core)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-core}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S runtime -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMTRT_CPU_BACKEND=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_BLAS=ON "${launcher[@]}" >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log"; exit 1; }
ninja -C "$dir" -j"${JOBS:-2}" >/dev/null
for target in mtrt_cpu megatron-run HostKernelsTest; do
  if ninja -C "$dir" -t targets all | grep -q "^$target:"; then
    echo "check-runtime-core: $target is built without the CPU backend" >&2
    exit 1
  fi
done
undefined=$(nm -u "$dir/libmtrt_core.a" | grep -E ' (MPI_|ompi_|cblas_|openblas_)' || true)
if [ -n "$undefined" ]; then
  echo "check-runtime-core: the core needs MPI or BLAS symbols:" >&2
  echo "$undefined" >&2
  exit 1
fi
for test in ArtifactRoundTripTest AsyncJoinsTest DeadlineTest ExecutionTraceTest \
    MemoryReportTest PeakFlopsTest RuntimeIOTest ThreadPoolTest; do
  "$dir/unittests/$test" --gtest_brief=1 >/dev/null
done
echo "check-runtime-core: mtrt_core and its unit tests built and passed without MPI or BLAS"
