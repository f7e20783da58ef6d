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
# OpenBLAS travels compressed (the device tool carries at most 64 MiB): it
# is unpacked once, beside the libraries that load it through RPATH
# $ORIGIN; where lib/ is read-only, into a folder of its own put on
# LD_LIBRARY_PATH (nothing else there for nvcc to load).
unpack_openblas() {
  local packed="$bundle/lib/libopenblas.so.0.xz" dir="$bundle/lib"
  if [ -f "$dir/libopenblas.so.0" ] || [ ! -f "$packed" ]; then return 0; fi
  if [ ! -w "$dir" ]; then
    dir="$(mktemp -d)"
    export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  local part="$dir/.libopenblas.so.0.$$"
  if { xz -dc "$packed" >"$part" 2>/dev/null ||
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as source, open(sys.argv[2], "wb") as target:
    shutil.copyfileobj(source, target, 1 << 20)' "$packed" "$part"; }; then
    mv -f "$part" "$dir/libopenblas.so.0"
  else
    rm -f "$part"
    echo "check.sh: cannot unpack $packed" >&2
    return 1
  fi
}
unpack_openblas
# Open MPI's mpirun, relocated into the bundle (bin/mpirun sets its
# install directories to ompi/ and its MCA defaults for one machine): for
# several ranks on the one GPU, e.g.
#   "$mpirun_bundle" -np 2 "$bundle/bin/megatron-run" a.mtx --device cuda
mpirun_bundle="$bundle/bin/mpirun"
# $OUT gets the summary, nvidia-smi's report and one archive of every log
# (the profiles among them): the device tool brings back at most 8 files.
# The summary is written there as it grows, so a call killed past its
# timeout still returns what ran (an EXIT trap does not run on SIGKILL).
final="${OUT:-$bundle/out}"
out="$(mktemp -d)"
mkdir -p "$final"
nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
cuda_lib="$(dirname "$(dirname "$nvcc_path")")/lib64"
# The bundle's libraries are found through their RPATH; only CUDA's own go
# on the path (nvcc, which megatron-run starts for the generated kernels,
# must not load the bundle's libraries).
export LD_LIBRARY_PATH="$cuda_lib:${LD_LIBRARY_PATH:-}"
export PATH="$(dirname "$nvcc_path"):$PATH"
export MEGATRON_NVCC="$nvcc_path"
export MEGATRON_CUDA_BACKEND="$bundle/lib/libmtrt_cuda_backend.so"
export MEGATRON_KERNEL_CACHE="$out/kernel-cache"
finish() {
  cp "$out/nvidia-smi.txt" "$final/" 2>/dev/null
  tar -czf "$final/logs.tar.gz" -C "$out" --exclude kernel-cache . 2>/dev/null
}
trap finish EXIT
run="$bundle/bin/megatron-run"
summary="$final/summary.md"
status=0
{
  echo "# CUDA backend check, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  # Which tree the bundle was built from (gpu-bundle.sh writes it): a
  # bundle older than the sources it claims to test is visible here.
  cat "$bundle/PROVENANCE" 2>/dev/null || echo "bundle provenance: unknown (no PROVENANCE file)"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
  echo '```'
  echo
} >"$summary"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
# The bundle was built on Debian 12 (glibc 2.36): a machine that cannot
# load it says so here, before any run.
{
  echo "- host: $(ldd --version 2>&1 | head -1)"
  missing="$(ldd "$bundle/bin/megatron-run" "$bundle/bin/CudaKernelsTest" "$MEGATRON_CUDA_BACKEND" "$bundle/ompi/bin/orterun" 2>&1 |
    grep -E 'not found|version .* not found' || true)"
  if [ -n "$missing" ]; then
    echo "- the bundle cannot load here:"
    echo '```'
    echo "$missing"
    echo '```'
  fi
} >>"$summary"
if grep -q "cannot load here" "$summary"; then
  cat "$summary"
  exit 1
fi

# cuDNN for the fused attention of 16-bit artifacts (the backend loads it
# at run time): the machine's own, else the one PyTorch's wheels bring.
# Without it, attention runs on the backend's own fp32 kernels.
if [ -z "${MEGATRON_CUDNN_LIBRARY:-}" ]; then
  cudnn="$(ldconfig -p 2>/dev/null | awk '/libcudnn\.so\.9 /{print $NF; exit}')"
  [ -n "$cudnn" ] || cudnn="$(python3 -c 'import glob, os, nvidia; print(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", "libcudnn.so.9"), recursive=True))[0])' 2>/dev/null)"
  [ -n "$cudnn" ] || cudnn="$(timeout 30 find / -xdev -name libcudnn.so.9 2>/dev/null | head -1)"
  if [ -n "$cudnn" ]; then
    export MEGATRON_CUDNN_LIBRARY="$cudnn"
    # Its engines are libraries beside it, which it opens by name.
    export LD_LIBRARY_PATH="$(dirname "$cudnn"):$LD_LIBRARY_PATH"
  fi
fi
echo "- cuDNN: ${MEGATRON_CUDNN_LIBRARY:-not found, attention on the own fp32 kernels}" >>"$summary"

# Every run has a time limit, so that one hang cannot spend the call.
limited() { timeout --kill-after=5 "$@"; }

# The correctness checks (about 200 s on an H100): all but the step times,
# unless MEGATRON_GPU_CHECK_BENCH_ONLY=1 (a second call of a session that
# checked them in its first, with its device time for the bench).
if [ "${MEGATRON_GPU_CHECK_BENCH_ONLY:-0}" = 1 ]; then
  echo "- correctness checks: skipped (MEGATRON_GPU_CHECK_BENCH_ONLY=1)" >>"$summary"
else

# The kernels that only a GPU runs, against the CPU backend's.
if timeout --kill-after=5 120 "$bundle/bin/CudaKernelsTest" --gtest_brief=1 >"$out/cuda-kernels.txt" 2>&1; then
  echo "- CudaKernelsTest: $(grep -E '^\[  PASSED' "$out/cuda-kernels.txt")" >>"$summary"
else
  echo "- CudaKernelsTest FAILS:" >>"$summary"
  echo '```' >>"$summary"
  grep -vE '^(Running main|\[==|\[--)' "$out/cuda-kernels.txt" | head -40 >>"$summary"
  echo '```' >>"$summary"
  status=1
fi

compare() { # name steps rtol [ranks [flags...]]: writes $out/$name.result, fails on a miss
  # With `ranks`, both backends run that many ranks under the bundle's
  # mpirun (megatron-run fails by itself if a rank's peak is not its plan);
  # `flags` go to both runs.
  local name="$1" steps="$2" rtol="$3" ranks="${4:-1}" result="$out/$1.result"
  local flags=("${@:5}")
  local artifact="$bundle/artifacts/$name.mtx" label="$1" threads=4
  local launch=()
  if [ "$ranks" -gt 1 ]; then
    launch=("$mpirun_bundle" -np "$ranks")
    label="$name ($ranks ranks on one GPU)"
    threads=2
  fi
  # The CPU side computed where the bundle was made (gpu-bundle.sh's
  # references), when it was run with these arguments.
  local reference="$bundle/references/$name-cpu"
  if [ "$ranks" -eq 1 ] && [ -f "$reference.jsonl" ] &&
    [ "$(cat "$reference.args")" = "--steps $steps${flags[*]:+ ${flags[*]}}" ]; then
    cp "$reference.jsonl" "$out/$name-cpu.jsonl"
    label="$name (the CPU's losses from the bundle)"
  else
    limited 300 "${launch[@]}" "$run" "$artifact" --steps "$steps" "${flags[@]}" --device cpu \
      --threads "$threads" --log "$out/$name-cpu.jsonl" >"$out/$name-cpu.txt" 2>&1 ||
      { echo "- $label: the CPU run failed: $(tail -1 "$out/$name-cpu.txt")" >"$result"; return 1; }
  fi
  limited 300 "${launch[@]}" "$run" "$artifact" --steps "$steps" "${flags[@]}" --device cuda \
    --log "$out/$name-cuda.jsonl" >"$out/$name-cuda.txt" 2>&1 ||
    { echo "- $label: the CUDA run failed: $(tail -1 "$out/$name-cuda.txt")" >"$result"; return 1; }
  local peaks
  if [ "$ranks" -gt 1 ]; then
    peaks="peak memory equal to the plan on $(grep -c '^peak memory.*(equal)' "$out/$name-cuda.txt") of $ranks ranks"
  else
    # The plan's peak, and what the driver says the process took.
    peaks="$(grep -h '^peak memory' "$out/$name-cuda.txt" | head -1)$(grep -h 'device memory taken' "$out/$name-cuda.txt" | head -1 | sed 's/^ */; /')"
  fi
  python3 - "$out/$name-cpu.jsonl" "$out/$name-cuda.jsonl" "$label" "$rtol" "$peaks" \
    "$(grep -hE '^cuda: (attention|communication)' "$out/$name-cuda.txt" | sort -u | paste -sd ';' -)" >"$result" <<'PY'
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1])]
gpu = [json.loads(l) for l in open(sys.argv[2])]
# A non-finite loss is logged as null: a failure, said as such.
def differ(a, b, key="loss"):
    if a.get(key) is None or b.get(key) is None:
        return float("inf")
    return abs(a[key] - b[key]) / abs(a[key])
# The training losses, and the validation losses where the runs evaluate
# (--eval-interval): both backends' on each line that has one.
def worst_of(a, b):
    keys = ["loss"] + (["validation_loss"]
                       if "validation_loss" in a or "validation_loss" in b else [])
    return max(differ(a, b, key) for key in keys)
worst = max(worst_of(a, b) for a, b in zip(cpu, gpu))
rtol = float(sys.argv[4])
ok = worst <= rtol and len(cpu) == len(gpu)
print("- %s: %d steps, worst loss difference %.2e relative (%s); %s%s" % (
    sys.argv[3], len(gpu), worst, "ok" if ok else "FAILS %g" % rtol,
    sys.argv[5] or "no peak memory line",
    "; " + sys.argv[6] if sys.argv[6] else ""))
sys.exit(0 if ok else 1)
PY
}

# fp32 (TF32 off): the issue's bar, 1e-5 relative over 10 steps. bf16
# rounds at the same points on both backends, but their GEMMs sum in other
# orders, so a rounding may flip: a looser bar. GPT-2 124M in bf16 without
# dropout (head dimension 64) has its attention on cuDNN's fused kernels
# where cuDNN loads: bf16 arithmetic in another order than the CPU's fp32,
# within 2e-3, at a learning rate of 1e-4. At the default 6e-4 without
# warmup, 124M on the synthetic corpus has loss spikes (PyTorch has the
# same ones from the same weights and tokens), and across a spike two runs
# a rounding apart part by percents: on 2026-11-27 the CPU's and the GPU's
# bf16 runs agreed within 1.5e-4 for six steps and then spiked to 10.75
# and 10.90 together (fp32 runs 6.66 there); at 1e-4, bf16 stays within
# 3e-4 of fp32 for 10 steps. The checks run side by side (each compiles
# its generated kernels with nvcc first); their times are not measured
# here.
checks=("tiny 10 1e-5" "tiny-dropout 10 1e-5" "gpt2-2layer 10 1e-5"
  "gpt2-124m 10 1e-5" "llama-gqa 10 1e-5" "llama31 10 1e-5"
  "tiny-unfused 10 1e-5" "tiny-padded 10 1e-5" "tiny-padded-unfused 10 1e-5"
  "tiny-dropout-remat 10 1e-5" "tiny-bf16 10 1e-2" "tiny-fp16 24 1e-2"
  "llama-gqa-bf16 10 1e-2" "mistral-window 10 1e-5" "gpt2-124m-bf16 10 2e-3 1 --lr 1e-4"
  "gpt2-2layer-accum 10 1e-5" "gpt2-2layer-accum-bf16 10 1e-2"
  "moe-mixtral 10 1e-5" "moe-qwen2 10 1e-5" "moe-capacity 10 1e-5" "moe-capacity-position 10 1e-5"
  "moe-mixtral-bf16 10 1e-2" "gemma2-softcap 10 1e-5"
  "tiny-dropout-eval 10 1e-5 1 --eval-interval 5 --eval-iters 2")
pids=()
for check in "${checks[@]}"; do
  # shellcheck disable=SC2086
  compare $check &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for check in "${checks[@]}"; do
  name="${check%% *}"
  cat "$out/$name.result" >>"$summary" 2>/dev/null ||
    { echo "- $name: no result" >>"$summary"; status=1; }
done

# bf16 tracks fp32 over 200 steps on the GPU (mean of the last 20 losses).
limited 120 "$run" "$bundle/artifacts/tiny.mtx" --steps 200 --device cuda --quiet --log "$out/tiny-200-fp32.jsonl" >/dev/null 2>&1 &&
  limited 120 "$run" "$bundle/artifacts/tiny-bf16.mtx" --steps 200 --device cuda --quiet --log "$out/tiny-200-bf16.jsonl" >/dev/null 2>&1 &&
  python3 - "$out/tiny-200-fp32.jsonl" "$out/tiny-200-bf16.jsonl" >>"$summary" <<'PY' || status=1
import json, sys
tail = lambda path: [json.loads(l)["loss"] or float("nan")
                     for l in open(path)][-20:]
fp32, bf16 = sum(tail(sys.argv[1])) / 20, sum(tail(sys.argv[2])) / 20
ok = abs(bf16 - fp32) / fp32 <= 0.02  # False for a NaN
print("- bf16 vs fp32 on CUDA, 200 steps: last-20 mean loss %.4f vs %.4f (%s)"
      % (bf16, fp32, "ok" if ok else "FAILS 2%"))
sys.exit(0 if ok else 1)
PY

# The parameters' bf16 copies that AdamW writes (the default) against
# casting the parameters every step, and AdamW by chunks (the default)
# against element by element: the same losses to the bit on the GPU, as
# on the CPU (parameter-copies.test; DeviceKernelsTest for the chunks).
if limited 120 "$run" "$bundle/artifacts/tiny-bf16.mtx" --steps 10 --device cuda --quiet \
  --log "$out/tiny-bf16-copies.jsonl" >"$out/tiny-bf16-copies.txt" 2>&1 &&
  limited 120 "$run" "$bundle/artifacts/tiny-bf16-cast.mtx" --steps 10 --device cuda --quiet \
    --log "$out/tiny-bf16-cast.jsonl" >"$out/tiny-bf16-cast.txt" 2>&1 &&
  limited 120 env MEGATRON_CUDA_ADAM=elements "$run" "$bundle/artifacts/tiny-bf16.mtx" \
    --steps 10 --device cuda --quiet --log "$out/tiny-bf16-elements.jsonl" \
    >"$out/tiny-bf16-elements.txt" 2>&1; then
  python3 - "$out/tiny-bf16-copies.jsonl" "$out/tiny-bf16-cast.jsonl" \
    "$out/tiny-bf16-elements.jsonl" >>"$summary" <<'PY' || status=1
import json, sys
copies, cast, elements = ([json.loads(l)["loss"] for l in open(path) if l.strip()]
                          for path in sys.argv[1:])
same_cast, same_elements = copies == cast, copies == elements
def verdict(mine, theirs):
    # Where they part, so that a failure says which step to look at.
    if mine == theirs:
        return "equal to the bit"
    for step, (a, b) in enumerate(zip(mine, theirs), 1):
        if a != b:
            return "DIFFER from step %d (%r against %r)" % (step, a, b)
    return "DIFFER: %d steps against %d" % (len(mine), len(theirs))
print("- bf16 on CUDA, 10 steps: parameter copies against casts %s; AdamW by "
      "chunks against element by element %s"
      % (verdict(copies, cast), verdict(copies, elements)))
sys.exit(0 if same_cast and same_elements and len(copies) == 10 else 1)
PY
else
  echo "- bf16 on CUDA, parameter copies and AdamW by chunks: a run failed" \
    "(tiny-bf16-{copies,cast,elements}.txt)" >>"$summary"
  status=1
fi

# --tf32: fp32 GEMMs on the TF32 tensor cores (10 mantissa bits), against
# the CPU backend's fp32 losses (gpt2-2layer's, above): within 1e-2.
limited 120 "$run" "$bundle/artifacts/gpt2-2layer.mtx" --steps 10 --device cuda --tf32 \
  --quiet --log "$out/gpt2-2layer-tf32.jsonl" >"$out/gpt2-2layer-tf32.txt" 2>&1 &&
  python3 - "$out/gpt2-2layer-cpu.jsonl" "$out/gpt2-2layer-tf32.jsonl" >>"$summary" <<'PY' || status=1
import json, sys
cpu = [json.loads(l)["loss"] for l in open(sys.argv[1])]
tf32 = [json.loads(l)["loss"] for l in open(sys.argv[2])]
worst = max(abs(a - b) / a if b is not None else float("inf")
            for a, b in zip(cpu, tf32))
ok = worst <= 1e-2 and len(cpu) == len(tf32)
print("- gpt2-2layer --tf32 on CUDA against fp32 on the CPU: worst loss "
      "difference %.2e relative over %d steps (%s)"
      % (worst, len(tf32), "ok" if ok else "FAILS 1e-2"))
sys.exit(0 if ok else 1)
PY

# Several ranks on the one GPU (NCCL refuses two ranks on one GPU, so their
# collectives and the pipeline's transfers go through host memory, MPI):
# tensor parallelism with the vocab-parallel loss, ZeRO-3's reduce-scatter
# and all-gather, ZeRO's padding to equal pieces over dp3, the pipeline's
# send/recv, and pp x tp, each against the same ranks on the CPU backend,
# 10 steps within 1e-5 (bf16 within 1e-2); and expert parallelism, whose
# exchange and expert replicas' sum go through host memory on CUDA
# (dp2 ep2; dp4 ep2 with each expert on two ranks, and under ZeRO-2 its
# gradient and optimizer state in halves over them).
if [ -x "${mpirun_bundle:-}" ]; then
  for check in "tiny-tp2 2" "tiny-dp2-zero3 2" "tiny-dp3-zero3 3" \
    "tiny-dp3-zero2-bf16 3 1e-2" "gpt2-2layer-pp2 2" "gpt2-2layer-pp2-tp2 4" \
    "moe-dp2-ep2 2" "moe-dp4-ep2 4" "moe-dp4-ep2-zero2 4"; do
    # shellcheck disable=SC2086
    set -- $check
    compare "$1" 10 "${3:-1e-5}" "$2" || status=1
    cat "$out/$1.result" >>"$summary" 2>/dev/null || { echo "- $1: no result" >>"$summary"; status=1; }
  done
else
  echo "- several ranks on the GPU: not checked (the bundle has no mpirun)" >>"$summary"
  status=1
fi

# A memory plan larger than the GPU is refused before anything is
# allocated, with the plan's size and the GPU's free memory.
if limited 120 "$run" "$bundle/artifacts/too-large.mtx" --steps 1 --device cuda >"$out/too-large.txt" 2>&1; then
  echo "- too-large: ran (FAILS: a plan larger than the GPU must be refused)" >>"$summary"
  status=1
elif grep -q "the memory plan needs an arena of .* free of" "$out/too-large.txt"; then
  echo "- too-large: refused ($(grep -o 'the memory plan needs an arena of [^:]*' "$out/too-large.txt" | head -1))" >>"$summary"
else
  echo "- too-large: FAILS (no refusal naming the plan; see too-large.txt: $(tail -1 "$out/too-large.txt"))" >>"$summary"
  status=1
fi
fi # MEGATRON_GPU_CHECK_BENCH_ONLY

# Where a step's time goes, alone on the GPU: GPT-2 124M (4 x 128, fp32),
# then issue 12's bench: GPT-2 124M, 350M and a 1.3B config (width 2048,
# 24 layers), bf16, 8 x 1024, dropout 0, megatron-run against PyTorch on
# the same GPU (eager, then torch.compile), model by model. These stop at
# a deadline (MEGATRON_GPU_CHECK_SECONDS, default 420 s from the start) so
# that everything above comes back; MEGATRON_GPU_CHECK_TORCH=0 leaves
# PyTorch out, MEGATRON_GPU_CHECK_MODELS picks the models.
deadline="${MEGATRON_GPU_CHECK_SECONDS:-420}"
left() { echo $((deadline - SECONDS)); }
{
  echo
  echo "## Step time (one GPU, nothing beside it)"
  echo
} >>"$summary"
timed() { # label seconds command...: runs it if time is left, logs its tail
  local label="$1" limit="$2"
  shift 2
  if [ "$(left)" -lt 20 ]; then
    echo "- $label: skipped, no time left" >>"$summary"
    return
  fi
  [ "$limit" -gt "$(left)" ] && limit="$(left)"
  limited "$limit" "$@" >"$out/$label.txt" 2>&1 ||
    echo "- $label: exit $? after at most ${limit} s (see $label.txt)" >>"$summary"
}
# Kernel variants of the bench, each profiled (3 eager steps) after its
# model's runs, in the time left: the norms' backward over blocks of
# 4 rows instead of 16 (norm-grad-row-block=4: four times the blocks to
# run at once), its block of 128 threads instead of 256
# (MT_ROW_BLOCK_THREADS, a flag of the generated kernels' nvcc), its rows
# by the whole block one after another instead of a warp each
# (MT_NORM_GRAD_ROW_THREADS, as the kernel ran on 2026-11-27 but for the
# column sums, now a phase of their own), the
# loss's softmax statistics in two passes (MT_SOFTMAX_TWO_PASSES) against
# the one pass, and the loss's kernel as it ran on 2026-11-27 (two passes,
# its gradient a column at a time: MT_ROW_CHUNK=1). A variant is NAME
# (the 124M bench) or NAME@MODEL; MEGATRON_GPU_CHECK_VARIANTS picks them
# (by default four at 1.3B, whose MFU is the target, each about 30 s
# after its model's runs: the parameters cast every step instead of read
# from the bf16 copies AdamW writes (the casts were 3.7 ms a step on
# 2026-11-27); AdamW element by element over the whole group instead of
# by chunks with 16-byte loads (2.25 TB/s on 2026-11-27, element by
# element); the norm backward over blocks of 4 rows, its
# 2048 columns ran at 859 GB/s on 2026-11-27; the weight-gradient GEMMs
# without cuBLASLt's bias-gradient epilogue, the bias gradients by their
# own reduction, its GEMMs ran at 634 TFLOP/s against the plain GEMMs'
# 764; and the norm backward's rows by the whole block). Each variant's
# step is the mean of its profiled steps after the first; its line also
# has the GEMMs' and bias gradients' rows.
# Each summary line: the profiled step and the norm backward's and the
# loss's kernels, beside the same line of the model's own profile
# (megatron-MODEL-profile); megatron-MODEL-variant-NAME.txt has the whole
# profile.
variant_of() { # name model: prints "artifact nvcc-flags"
  case "$1" in
  rowblock4) echo "bench-$2-rowblock4 " ;;
  rowblock32) echo "bench-$2-rowblock32 " ;;
  rowblock4-threads128) echo "bench-$2-rowblock4 -DMT_ROW_BLOCK_THREADS=128" ;;
  threads128) echo "bench-$2 -DMT_ROW_BLOCK_THREADS=128" ;;
  rows-by-block) echo "bench-$2 -DMT_NORM_GRAD_ROW_THREADS=MT_ROW_BLOCK_THREADS" ;;
  softmax-two-passes) echo "bench-$2 -DMT_SOFTMAX_TWO_PASSES" ;;
  loss-as-before) echo "bench-$2 -DMT_SOFTMAX_TWO_PASSES -DMT_ROW_CHUNK=1" ;;
  no-bias-grad-epilogues) echo "bench-$2-no-bias-grad-epilogues " ;;
  cast-parameters) echo "bench-$2-cast-parameters " ;;
  adam-elements) echo "bench-$2 " ;;
  *) return 1 ;;
  esac
}
variant_env() { # name: the variant's environment for megatron-run, if any
  case "$1" in
  adam-elements) echo "MEGATRON_CUDA_ADAM=elements" ;;
  esac
}
variant_line() { # label: the profiled steps' mean and the two kernels' rows
  python3 - "$out/$1.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
steps = [float(s) for s in re.findall(r"^step .*\| ([0-9.]+) s \|", text, re.M)]
steps = steps[1:] or steps  # past the first step's warm-up
rows = [l.strip() for l in text.splitlines()
        if re.search(r"row fusion of (layer_norm_grad|cross_entropy)"
                     r"|^\s*(matmul_bias_grad|matmul|bias_add_grad"
                     r"|multi_adamw|multi_cast) ", l)]
print("step %s ms; %s" % (
    "%.2f" % (1e3 * sum(steps) / len(steps)) if steps else "?",
    "; ".join(re.sub(r"\s+", " ", r) for r in rows) or "no such kernels"))
PY
}
variants="${MEGATRON_GPU_CHECK_VARIANTS:-cast-parameters@1.3b adam-elements@1.3b no-bias-grad-epilogues@1.3b rowblock4@1.3b}"
variant_model() { # variant: its model (124m unless NAME@MODEL)
  case "$1" in
  *@*) echo "${1#*@}" ;;
  *) echo 124m ;;
  esac
}
# Every variant named is checked once, before anything runs: an unknown
# name or model is reported (and fails the check) rather than skipped.
for variant in $variants; do
  case "$(variant_model "$variant")" in
  124m | 350m | 1.3b) ;;
  *)
    echo "- variant $variant: unknown model (124m, 350m or 1.3b)" >>"$summary"
    status=1
    continue
    ;;
  esac
  variant_of "${variant%@*}" 124m >/dev/null ||
    { echo "- variant $variant: unknown (check.sh's variant_of names them)" >>"$summary"; status=1; }
done
run_variants() { # model: runs its variants
  local variant name model spec artifact flags label
  for variant in $variants; do
    name="${variant%@*}" model="$(variant_model "$variant")"
    [ "$model" = "$1" ] || continue
    spec="$(variant_of "$name" "$model")" || continue # reported above
    read -r artifact flags <<<"$spec"
    if [ ! -f "$bundle/artifacts/$artifact.mtx" ]; then
      echo "- variant $variant: the bundle has no $artifact.mtx" >>"$summary"
      status=1
      continue
    fi
    if [ -f "$out/megatron-$model-profile.txt" ] && [[ " $baselines " != *" $model "* ]]; then
      baselines="$baselines $model"
      echo "- megatron-$model-profile (the variants' baseline): $(variant_line "megatron-$model-profile")" >>"$summary"
    fi
    label="megatron-$model-variant-$name"
    # shellcheck disable=SC2046 # the variant's NAME=VALUE words, if any
    timed "$label" 150 env MEGATRON_NVCC_FLAGS="$flags" $(variant_env "$name") \
      "$run" "$bundle/artifacts/$artifact.mtx" $bench_flags --steps 3 --device cuda --profile
    [ -f "$out/$label.txt" ] &&
      echo "- variant $variant ($artifact${flags:+, $flags}): $(variant_line "$label")" >>"$summary"
  done
}
baselines=""
# MEGATRON_GPU_CHECK_TORCH_MODES picks PyTorch's modes (both by default;
# "compile" alone where device time is short: the targets are against
# torch.compile), checked once before anything runs, as the variants are.
torch_modes=""
for mode in ${MEGATRON_GPU_CHECK_TORCH_MODES:-eager compile}; do
  case "$mode" in
  eager | compile) torch_modes="$torch_modes $mode" ;;
  *)
    echo "- PyTorch mode $mode: unknown (MEGATRON_GPU_CHECK_TORCH_MODES takes eager and compile)" >>"$summary"
    status=1
    ;;
  esac
done
# MEGATRON_GPU_CHECK_TORCH_CLIP: the norms PyTorch's step clips its
# gradients at, each measured in the same process (default 1.0, as
# megatron-run's step, then 0, none: what clipping costs PyTorch's step).
torch_clip="${MEGATRON_GPU_CHECK_TORCH_CLIP:-1.0,0}"
if ! [[ "$torch_clip" =~ ^[0-9]+(\.[0-9]*)?(,[0-9]+(\.[0-9]*)?)*$ ]]; then
  echo "- PyTorch clipping $torch_clip: not a comma list of norms (MEGATRON_GPU_CHECK_TORCH_CLIP)" >>"$summary"
  status=1
  torch_clip=1.0
fi
# The bench's flags: its tokens, the synthetic corpus over GPT-2's whole
# vocabulary; and PyTorch's baseline's learning rate, constant (bench_lr),
# so that the losses the two print come from one optimizer (until
# 2026-11-28 megatron-run ran at its default 6e-4, decaying, against
# PyTorch's constant 1e-4).
bench_lr=1e-4
bench_flags="--corpus-vocab 50257 --lr $bench_lr --lr-decay-style constant"

timed gpt2-124m-profile 90 "$run" "$bundle/artifacts/gpt2-124m.mtx" --steps 6 \
  --device cuda --profile --log "$out/gpt2-124m-profile.jsonl"
# The 1.3B config before 350M: its MFU is issue 12's target, and the
# model last in line is the one a deadline cuts (on 2026-11-27 the 1.3B
# config's PyTorch runs were never reached).
for model in ${MEGATRON_GPU_CHECK_MODELS:-124m 1.3b 350m}; do
  # Timed without --profile, whose per-command events keep the steps
  # eager: the first step runs eagerly, the second is captured as a CUDA
  # graph, the rest replay it. Then 3 profiled (eager) steps. The tokens
  # come from the synthetic corpus over the whole vocabulary
  # ($bench_flags), as PyTorch's baseline draws them over it: the default
  # corpus of 64 tokens gave each of those rows of the embedding gradient
  # a run of 128 tokens to add (0.76 ms of the 31 ms step at 124M on
  # 2026-11-27).
  timed "megatron-$model" 150 "$run" "$bundle/artifacts/bench-$model.mtx" \
    $bench_flags --steps 6 --device cuda --log "$out/megatron-$model.jsonl"
  grep -h '^cuda: ' "$out/megatron-$model.txt" 2>/dev/null |
    sed "s/^/- megatron-run $model, /" >>"$summary"
  timed "megatron-$model-profile" 150 "$run" "$bundle/artifacts/bench-$model.mtx" \
    $bench_flags --steps 3 --device cuda --profile
  accumulate=1
  if [ "$model" = 124m ]; then
    # The same model with the bias epilogue alone and a cast per parameter.
    timed "megatron-124m-plain" 90 "$run" "$bundle/artifacts/bench-124m-plain.mtx" \
      $bench_flags --steps 6 --device cuda --log "$out/megatron-124m-plain.jsonl"
  elif [ "$model" = 1.3b ]; then
    # The 1.3B config with gradient accumulation, as it trains in practice
    # (Megatron-LM's GPT runs accumulate to global batches of hundreds of
    # sequences): 4 micro-batches of 8 x 1024 a step, so the optimizer's
    # AdamW, gradient norm and parameter casts (about 40 GB of traffic a
    # step at 1.3B) count once per 32 sequences instead of once per 8.
    # PyTorch measures the same (--accumulate 1,4: both in one process,
    # one compilation).
    accumulate=1,4
    timed "megatron-1.3b-accum4" 150 "$run" "$bundle/artifacts/bench-1.3b-accum4.mtx" \
      $bench_flags --steps 5 --device cuda --log "$out/megatron-1.3b-accum4.jsonl"
  fi
  if [ "${MEGATRON_GPU_CHECK_TORCH:-1}" != 0 ]; then
    for mode in $torch_modes; do
      timed "torch-$model-$mode" 180 python3 "$bundle/gpu_torch_baseline.py" \
        --model "$model" --mode "$mode" --batch 8 --seq 1024 --accumulate "$accumulate" \
        --clip-grad "$torch_clip" --lr "$bench_lr"
    done
  fi
  run_variants "$model"
done
python3 - "$out" >>"$summary" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
# (layers, width) of the bench's models, for megatron-run's MFU as
# gpu_torch_baseline.py counts it: 6 N (non-embedding, tied head counted
# once) + 12 layers seq width per token, against 989 TFLOP/s.
models = {"124m": (12, 768), "350m": (24, 1024), "1.3b": (24, 2048)}
vocab, seq, peak = 50257, 1024, 989e12
def megatron(path):
    # Past the eager first step and the step that captures the graph.
    steps = [json.loads(l) for l in open(path) if l.strip()]
    steady = steps[2:] or steps[1:] or steps
    return (statistics.median(s["tokens_per_s"] for s in steady),
            steps[-1].get("peak_bytes") or 0, len(steps))
path = os.path.join(out, "gpt2-124m-profile.jsonl")
if os.path.exists(path):
    tokens, peak_bytes, n = megatron(path)
    print("- megatron-run GPT-2 124M fp32 4 x 128: %.0f tokens/s (%d steps), "
          "peak %d B" % (tokens, n, peak_bytes))
print()
print("| model | run | tokens/s | MFU | peak memory | megatron-run against it |")
print("|---|---|---:|---:|---:|---:|")
for model, (layers, width) in models.items():
    params = layers * 12 * width * width + vocab * width
    flops = 6 * params + 12 * layers * seq * width
    rows = []
    path = os.path.join(out, "megatron-%s.jsonl" % model)
    if os.path.exists(path):
        tokens, peak_bytes, n = megatron(path)
        rows.append(("megatron-run bf16", tokens, peak_bytes))
    path = os.path.join(out, "megatron-%s-plain.jsonl" % model)
    if os.path.exists(path):
        tokens, peak_bytes, n = megatron(path)
        rows.append(("megatron-run bf16, bias epilogue only, a cast per "
                     "parameter", tokens, peak_bytes))
    # With gradient accumulation (4 micro-batches a step): its own rows,
    # compared with each other.
    accumulated = []
    path = os.path.join(out, "megatron-%s-accum4.jsonl" % model)
    if os.path.exists(path):
        tokens, peak_bytes, n = megatron(path)
        accumulated.append(("megatron-run bf16", tokens, peak_bytes))
    for mode in ("eager", "compile"):
        path = os.path.join(out, "torch-%s-%s.txt" % (model, mode))
        if not os.path.exists(path):
            continue
        for line in open(path):
            if line.startswith("{"):
                r = json.loads(line)
                # Clipping at 1.0, as megatron-run's step (runs before
                # 2026-11-27's ninth session did not clip).
                row = ("PyTorch " + mode + ("" if r.get("clip_grad", 0) > 0
                                            else ", no clipping"),
                       r["tokens_per_s"], r["peak_memory_bytes"])
                (rows if r.get("accumulate", 1) == 1 else accumulated).append(row)
    for label, table in ((model, rows),
                         (model + ", 4 micro-batches a step", accumulated)):
        mine = table[0][1] if table and table[0][0] == "megatron-run bf16" \
            else None
        for name, tokens, peak_bytes in table:
            ratio = ("%.2f" % (mine / tokens)) if mine and name != \
                "megatron-run bf16" else ""
            print("| %s | %s | %.0f | %.1f%% | %.2f GiB | %s |" % (
                label, name, tokens, 100 * tokens * flops / peak,
                peak_bytes / 2**30, ratio))
PY
echo "- the check took $SECONDS s" >>"$summary"
cat "$summary"
exit "$status"
