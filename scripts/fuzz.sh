#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang (ASan + UBSan) in their
# own build directory and runs each one for a bounded time. See
# docs/fuzzing.md.
#
#   scripts/fuzz.sh [FUZZER...]       artifact-loader safetensors token-data
#                                     indexed-dataset checkpoint-shards
#                                     hf-config-import compile (default: all)
#
# Environment:
#   FUZZ_SECONDS   seconds per fuzzer (default 60; libFuzzer -max_total_time)
#   BUILD_DIR      build directory (default build-fuzz; build-fuzz-runtime
#                  with FUZZ_RUNTIME_ONLY=1)
#   FUZZ_RUNTIME_ONLY=1
#                  configure fuzz/ on its own: the five runtime fuzzers,
#                  without LLVM or MLIR
#   FUZZ_OUT       where crashing inputs and logs go (default
#                  $BUILD_DIR/fuzz-out/<fuzzer>/)
#   FUZZ_ARGS      extra libFuzzer flags for every fuzzer (e.g. -jobs=2)
#   JOBS           build parallelism (default: nproc)
#   CC, CXX        compilers (default clang-22, clang++-22)
#   FUZZ_BUILD_ONLY=1  build, do not run
#
# Each fuzzer starts from a scratch copy of its committed corpus
# (fuzz/corpus/<fuzzer>/), so new inputs never land in the repository, and
# prints one summary line. The script exits non-zero if any fuzzer found a
# crash, a leak, a timeout or an out-of-memory input; the input is saved
# under $FUZZ_OUT/<fuzzer>/ (reproduce: $BUILD_DIR/fuzz/bin/<fuzzer>-fuzzer
# INPUT).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
jobs="${JOBS:-$(nproc)}"
cc="${CC:-clang-22}"
cxx="${CXX:-clang++-22}"
all=(artifact-loader safetensors token-data indexed-dataset checkpoint-shards
     hf-config-import compile)

if [ "${FUZZ_RUNTIME_ONLY:-0}" = 1 ]; then
  build="${BUILD_DIR:-$root/build-fuzz-runtime}"
  source_dir="$root/fuzz"
  all=(artifact-loader safetensors token-data indexed-dataset
       checkpoint-shards)
  extra=()
else
  build="${BUILD_DIR:-$root/build-fuzz}"
  source_dir="$root"
  extra=(-DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
         -DMEGATRON_ENABLE_FUZZERS=ON -DMEGATRON_ENABLE_CUDA=OFF)
fi
out="${FUZZ_OUT:-$build/fuzz-out}"
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=("${all[@]}")
for name in "${fuzzers[@]}"; do
  [ -d "$root/fuzz/corpus/$name" ] ||
    { echo "fuzz.sh: unknown fuzzer '$name' (known: ${all[*]})" >&2; exit 2; }
done

# What the build needs (a fresh machine has none of it): the project's
# packages, and clang with libFuzzer and the sanitizer runtimes.
"$root/scripts/install-deps.sh"
fuzz_packages=()
for package in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || fuzz_packages+=("$package")
done
if [ ${#fuzz_packages[@]} -gt 0 ]; then
  echo "fuzz.sh: installing ${fuzz_packages[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${fuzz_packages[@]}" >/dev/null
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$source_dir" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" "${extra[@]}"
fi
targets=()
for name in "${fuzzers[@]}"; do targets+=("$name-fuzzer"); done
ninja -C "$build" -j "$jobs" "${targets[@]}"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/megatron-fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

failed=0
summaries=()
for name in "${fuzzers[@]}"; do
  binary="$build/fuzz/bin/$name-fuzzer"
  corpus="$root/fuzz/corpus/$name"
  dict="$root/fuzz/dicts/$name.dict"
  results="$out/$name"
  mkdir -p "$results" "$scratch/$name"
  cp "$corpus"/* "$scratch/$name/"
  log="$results/fuzz.log"
  args=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$results/")
  [ -f "$dict" ] && args+=(-dict="$dict")
  echo "== $name: ${seconds}s, log $log"
  marker="$scratch/$name.start"
  touch "$marker"
  status=0
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  "$binary" "${args[@]}" ${FUZZ_ARGS:-} "$scratch/$name" "$corpus" \
    > "$log" 2>&1 || status=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  last="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  corp="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")"
  crashes="$(find "$results" -maxdepth 1 -type f -newer "$marker" \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
       -o -name 'oom-*' \) | wc -l)"
  verdict=ok
  if [ "$status" -ne 0 ] || [ "${crashes:-0}" -gt 0 ]; then
    verdict="FAILED (exit $status)"
    failed=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|==FUZZ PROPERTY)|runtime error' "$log" |
      head -5 >&2 || true
  fi
  summaries+=("$(printf '%-17s runs %-9s exec/s %-6s cov %-6s ft %-6s corpus %-5s crashes %-3s %s' \
    "$name" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
    "${crashes:-0}" "$verdict")")
  echo "${summaries[-1]}"
done

echo
echo "== fuzz summary (${seconds}s each; crashing inputs under $out/<fuzzer>/)"
printf '%s\n' "${summaries[@]}"
exit "$failed"
