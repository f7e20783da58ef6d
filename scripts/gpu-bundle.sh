#!/usr/bin/env bash
# Prepares everything a GPU machine needs to check the CUDA backend in one
# call: the GPU machine has CUDA, nvcc, a C++ compiler and Python but none
# of our Debian dependencies and no MLIR, so the runtime built here travels
# with its libraries (not the CUDA ones: the GPU machine's CUDA 13 serves),
# and the artifacts are compiled here.
#
#   scripts/gpu-bundle.sh            # here: writes gpu-bundle/ (about 45 MiB)
#   gpu-bundle/check.sh              # there (the device tool's `run`, with
#                                    # carry ["gpu-bundle"]); results in $OUT
#
# The bundle: bin/megatron-run, lib/ (libmtrt.so, libmtrt_cuda_backend.so,
# MPI, OpenBLAS ...), artifacts/*.mtx and check.sh; docs/gpu-check.md says
# how to run it and what it checks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bundle="$root/gpu-bundle"
[ -x "$build/bin/megatron-run" ] || "$root/scripts/build.sh"
[ -f "$build/lib/libmtrt_cuda_backend.so" ] || {
  echo "gpu-bundle: $build has no CUDA backend (is nvcc installed?)" >&2
  exit 1
}
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/artifacts"
cp "$build/bin/megatron-run" "$build/unittests/CudaKernelsTest" "$bundle/bin/"
cp "$build/lib/libmtrt.so" "$build/lib/libmtrt_cuda_backend.so" "$bundle/lib/"
# Every library they load but the C library, the CUDA ones and the driver
# (the C++ runtime is linked into them). They find these beside them
# through their RPATH ($ORIGIN), so no LD_LIBRARY_PATH is needed there.
ldd "$build/bin/megatron-run" "$build/lib/libmtrt_cuda_backend.so" |
  awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so|/libcu|/libnv|/libmtrt' |
  while read -r library; do cp -L "$library" "$bundle/lib/"; done

translate="$build/bin/megatron-translate"
opt="$build/bin/megatron-opt"
compile() { # name config micro-batch seq pipeline-options
  "$translate" --import-hf-config "$2" --micro-batch-size "$3" --seq-length "$4" |
    "$opt" --mt-train-pipeline="$5" |
    "$translate" --export-artifact -o "$bundle/artifacts/$1.mtx"
}
compile tiny "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 ""
compile tiny-dropout "$root/test/runtime/Inputs/gpt2-tiny-dropout.json" 2 8 ""
compile gpt2-2layer "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 ""
compile gpt2-124m "$root/examples/gpt2/gpt2.json" 4 128 ""
python3 -c 'import json, sys
config = dict(json.load(open(sys.argv[1])), embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0)
json.dump(config, open(sys.argv[2], "w"))' "$root/examples/gpt2/gpt2.json" "$bundle/gpt2-nodropout.json"
compile gpt2-124m-bf16 "$bundle/gpt2-nodropout.json" 4 128 "precision=bf16"
rm "$bundle/gpt2-nodropout.json"
compile tiny-bf16 "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "precision=bf16"
compile llama-gqa "$root/test/integration/Inputs/llama-2layer-gqa.json" 2 8 ""
compile llama31 "$root/test/integration/Inputs/llama31-2layer.json" 2 8 ""
compile tiny-unfused "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "fuse=false"
# Issue 12's bench, against PyTorch there: GPT-2 124M, 350M and a 1.3B
# config (width 2048, 24 layers), bf16, 8 x 1024, dropout 0 (as PyTorch's).
configs="$(mktemp -d)"
python3 - "$root/examples/gpt2/gpt2.json" "$configs" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
for name, (width, layers, heads) in {"124m": (768, 12, 12),
                                     "350m": (1024, 24, 16),
                                     "1.3b": (2048, 24, 16)}.items():
    config = dict(base, n_embd=width, n_layer=layers, n_head=heads,
                  embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0)
    json.dump(config, open("%s/gpt2-%s.json" % (sys.argv[2], name), "w"))
PY
for model in 124m 350m 1.3b; do
  compile "bench-$model" "$configs/gpt2-$model.json" 8 1024 "precision=bf16"
done
rm -rf "$configs"
cp "$root/bench/gpu_torch_baseline.py" "$bundle/"
cp "$root/scripts/gpu-check.sh" "$bundle/check.sh"
du -sh "$bundle"
