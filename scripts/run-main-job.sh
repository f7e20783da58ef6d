#!/usr/bin/env bash
# The main job on the CPU default: installs what is missing, builds, imports
# the published GPT-2 124M config and compiles it with the passes that exist
# today, printing the model summary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${OUT_DIR:-$root/out}"
config="${CONFIG:-$root/examples/gpt2/gpt2.json}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" megatron-opt megatron-translate
mkdir -p "$out"

echo "== import $config (micro-batch 8, sequence 1024)"
"$build/bin/megatron-translate" --import-hf-config "$config" \
  --micro-batch-size 8 --seq-length 1024 -o "$out/gpt2.mlir"
echo "   wrote $out/gpt2.mlir"

echo "== compile: verify, canonicalize, summarize"
"$build/bin/megatron-opt" "$out/gpt2.mlir" \
  --pass-pipeline="builtin.module(canonicalize,mt-print-model-summary)" \
  -o "$out/gpt2.opt.mlir"
echo "   wrote $out/gpt2.opt.mlir"
