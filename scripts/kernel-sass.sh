#!/usr/bin/env bash
# What nvcc makes of a program's generated kernels, without a GPU: per
# kernel its registers, stack, spills and shared memory (ptxas -v), and the
# order of its global loads and stores in the SASS (cuobjdump), as runs:
# "8 LDG 4 STG" means eight loads in flight before the stores, "2 LDG 1 STG"
# repeated means each pair of loads waited behind the previous store.
#
#   scripts/kernel-sass.sh PROGRAM.mlir [NAME-REGEX] [-- NVCC-FLAGS...]
#
# PROGRAM.mlir: megatron-opt's output (--mt-train-pipeline ...), whose
# kernels megatron-translate --export-kernels writes out. NAME-REGEX picks
# kernels by their heading (default: all). NVCC-FLAGS are added to the
# backend's (-O3 --fmad=false -arch=sm_90a), e.g. -DMT_ROW_BLOCK_THREADS=128.
#
# cuobjdump (with nvdisasm beside it): $CUOBJDUMP, else the one on PATH,
# else NVIDIA's PyPI wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)
# unpacked once under $XDG_CACHE_HOME (or ~/.cache)/megatron-mlir/. Without
# them, the SASS column says so and the rest is printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: scripts/kernel-sass.sh PROGRAM.mlir [NAME-REGEX] [-- NVCC-FLAGS...]" >&2
  [ $# -ge 1 ] && echo "kernel-sass: no such file: $1" >&2
  exit 2
fi
program="$1"
shift
pattern="."
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  pattern="$1"
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[ -x "$nvcc" ] || { echo "kernel-sass: no nvcc (looked on PATH and /usr/local/cuda/bin)" >&2; exit 1; }

cuobjdump="${CUOBJDUMP:-$(command -v cuobjdump || true)}"
# cuobjdump and nvdisasm from the cache of NVIDIA's wheels, if there
# (cuobjdump disassembles through nvdisasm, found on PATH).
cached_tools() {
  cuobjdump="$(find "$cache" -type f -name cuobjdump 2>/dev/null | head -1 || true)"
  nvdisasm="$(find "$cache" -type f -name nvdisasm 2>/dev/null | head -1 || true)"
  [ -n "$cuobjdump" ] && chmod +x "$cuobjdump"
  [ -n "$nvdisasm" ] && chmod +x "$nvdisasm" && export PATH="$(dirname "$nvdisasm"):$PATH"
  return 0
}
if [ -z "$cuobjdump" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/megatron-mlir/cuobjdump"
  cached_tools
  if [ -z "$cuobjdump" ]; then
    mkdir -p "$cache"
    # The wheels of nvcc's major version (13 here).
    major="$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
    if timeout 180 python3 -m pip download --no-deps -q \
      "nvidia-cuda-cuobjdump==${major:-13}.*" "nvidia-cuda-nvdisasm==${major:-13}.*" \
      -d "$cache" >/dev/null 2>&1 &&
      python3 -c 'import glob, sys, zipfile
for wheel in glob.glob(sys.argv[1] + "/*.whl"):
    zipfile.ZipFile(wheel).extractall(sys.argv[1] + "/unpacked")' "$cache" 2>/dev/null; then
      cached_tools
    else
      rm -rf "$cache" # a partial download is fetched again next time
      cuobjdump=""
    fi
  fi
fi
[ -n "$cuobjdump" ] && export PATH="$(dirname "$cuobjdump"):$PATH"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$build/bin/megatron-translate" --export-kernels "$program" -o "$work/kernels.cu"
"$nvcc" -std=c++17 -O3 --fmad=false -arch=sm_90a -w "$@" -cubin -Xptxas -v \
  -x cu "$work/kernels.cu" -o "$work/kernels.cubin" 2>"$work/ptxas.txt" || {
  cat "$work/ptxas.txt" >&2
  exit 1
}
python3 - "$work" "$pattern" "${cuobjdump:-}" <<'PY'
import re, subprocess, sys
work, pattern, cuobjdump = sys.argv[1:4]
source = open(work + "/kernels.cu").read()
kernels = set(re.findall(r"^MT_KERNEL\((\w+)\)", source, re.M))
headings = {name: what for name, what in
            re.findall(r"^// (\w+): (.*)$", source, re.M) if name in kernels}
usage, name = {}, None
for line in open(work + "/ptxas.txt"):
    m = re.search(r"Compiling entry function '(\w+)'", line)
    if m:
        name = m.group(1)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
    if m and name:
        usage.setdefault(name, {})["stack"] = int(m.group(1))
        usage[name]["spills"] = int(m.group(2))
    m = re.search(r"Used (\d+) registers", line)
    if m and name:
        smem = re.search(r"(\d+) bytes smem", line)
        usage.setdefault(name, {})["registers"] = int(m.group(1))
        usage[name]["smem"] = int(smem.group(1)) if smem else 0
print("%-16s %5s %5s %6s %5s  %-60s %s" % ("kernel", "regs", "stack",
                                          "spills", "smem", "what",
                                          "global loads/stores in SASS order"))
for kernel in sorted(headings, key=lambda k: [int(t) if t.isdigit() else t
                                             for t in re.split(r"(\d+)", k)]):
    if not re.search(pattern, kernel + ": " + headings[kernel]):
        continue
    runs = "(no cuobjdump)"
    if cuobjdump:
        done = subprocess.run([cuobjdump, "-sass", "-fun", kernel,
                               work + "/kernels.cubin"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("kernel-sass: %s failed on %s: %s" % (
                cuobjdump, kernel, done.stderr.strip()))
        ops = re.findall(r"\b(LDG|STG)[.A-Z0-9]*", done.stdout)
        grouped = []
        for op in ops:
            if grouped and grouped[-1][0] == op:
                grouped[-1][1] += 1
            else:
                grouped.append([op, 1])
        runs = " ".join("%d %s" % (n, op) for op, n in grouped) or "none"
    u = usage.get(kernel, {})
    print("%-16s %5s %5s %6s %5s  %-60s %s" % (
        kernel, u.get("registers", "?"), u.get("stack", "?"),
        u.get("spills", "?"), u.get("smem", "?"), headings[kernel][:60], runs))
PY
