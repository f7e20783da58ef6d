#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in one call (issue 12): copied into
# gpu-bundle/ as check.sh by scripts/gpu-bundle.sh, and run there:
#
#   gpu-bundle/check.sh     (the device tool: run, carry ["gpu-bundle"])
#
# Writes into $OUT (default gpu-bundle/out): the GPU and driver
# (nvidia-smi), every run's log, and summary.md: each fp32 artifact's
# losses on the CPU and CUDA backends over 10 steps (within 1e-5 relative
# is the issue's bar), the measured against the planned peak, and the
# CUDA step time. Exits non-zero when a check fails; goes on to the next
# check first, so one call shows everything.
set -uo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$bundle/out}"
mkdir -p "$out"
nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
cuda_lib="$(dirname "$(dirname "$nvcc_path")")/lib64"
export LD_LIBRARY_PATH="$bundle/lib:$cuda_lib:${LD_LIBRARY_PATH:-}"
export MEGATRON_CUDA_BACKEND="$bundle/lib/libmtrt_cuda_backend.so"
export MEGATRON_KERNEL_CACHE="$out/kernel-cache"
run="$bundle/bin/megatron-run"
summary="$out/summary.md"
status=0
{
  echo "# CUDA backend check, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
  echo '```'
  echo
} >"$summary"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1

compare() { # name steps
  local name="$1" steps="$2"
  local artifact="$bundle/artifacts/$name.mtx"
  "$run" "$artifact" --steps "$steps" --device cpu --log "$out/$name-cpu.jsonl" \
    >"$out/$name-cpu.txt" 2>&1 || { echo "- $name: the CPU run failed (see $name-cpu.txt)" >>"$summary"; status=1; return; }
  "$run" "$artifact" --steps "$steps" --device cuda --log "$out/$name-cuda.jsonl" \
    >"$out/$name-cuda.txt" 2>&1 || { echo "- $name: the CUDA run failed: $(tail -1 "$out/$name-cuda.txt")" >>"$summary"; status=1; return; }
  python3 - "$out/$name-cpu.jsonl" "$out/$name-cuda.jsonl" "$name" >>"$summary" <<'PY' || status=1
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1])]
gpu = [json.loads(l) for l in open(sys.argv[2])]
worst = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(cpu, gpu))
steady = gpu[1:] or gpu
time = sum(s["step_time_s"] for s in steady) / len(steady)
cpu_time = sum(s["step_time_s"] for s in (cpu[1:] or cpu)) / len(cpu[1:] or cpu)
ok = worst <= 1e-5 and len(cpu) == len(gpu)
print("- %s: %d steps, worst loss difference %.2e relative (%s); step %.4f s on "
      "CUDA, %.4f s on the CPU; peak bytes %s" % (
          sys.argv[3], len(gpu), worst, "ok" if ok else "FAILS 1e-5",
          time, cpu_time, gpu[-1].get("peak_bytes")))
sys.exit(0 if ok else 1)
PY
}

compare tiny 10
compare tiny-dropout 10
compare gpt2-2layer 10
compare gpt2-124m 5
# What the backend does not run yet is refused before anything runs.
if "$run" "$bundle/artifacts/tiny-bf16.mtx" --steps 1 --device cuda >"$out/bf16.txt" 2>&1; then
  echo "- tiny-bf16: ran on CUDA (bf16 was expected to be refused)" >>"$summary"
  status=1
else
  echo "- tiny-bf16: refused as expected: $(tail -1 "$out/bf16.txt")" >>"$summary"
fi
cat "$summary"
exit "$status"
