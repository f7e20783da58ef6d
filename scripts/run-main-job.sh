#!/usr/bin/env bash
# The main job on the CPU default: installs what is missing, builds, compiles
# a small GPT-2 (examples/gpt2/gpt2-mini.json: 4 layers, width 128) into a
# training step and trains it with megatron-run on the built-in synthetic
# corpus, printing each step's loss beside the corpus entropy (the floor).
# CONFIG, STEPS, BATCH, SEQ and OUT_DIR override the defaults.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${OUT_DIR:-$root/out}"
config="${CONFIG:-$root/examples/gpt2/gpt2-mini.json}"
steps="${STEPS:-300}"
batch="${BATCH:-8}"
seq="${SEQ:-64}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" megatron-opt megatron-translate megatron-run
mkdir -p "$out"

echo "== import $config (micro-batch $batch, sequence $seq)"
"$build/bin/megatron-translate" --import-hf-config "$config" \
  --micro-batch-size "$batch" --seq-length "$seq" -o "$out/model.mlir"
"$build/bin/megatron-opt" "$out/model.mlir" --mt-print-model-summary -o /dev/null

echo "== compile: --mt-train-pipeline (autodiff, AdamW, lowering, memory plan)"
"$build/bin/megatron-opt" "$out/model.mlir" --mt-train-pipeline -o "$out/model.mtrt.mlir"
"$build/bin/megatron-translate" --export-artifact "$out/model.mtrt.mlir" -o "$out/model.mtx"
echo "   wrote $out/model.mtx"

echo "== train $steps steps on the CPU"
"$build/bin/megatron-run" "$out/model.mtx" --steps "$steps" --lr 3e-3 \
  --lr-warmup-iters 20 --lr-decay-style cosine --min-lr 3e-4 \
  --eval-interval 100 --eval-iters 10 \
  --log "$out/train.jsonl" --save-params "$out/model.safetensors"
