#!/usr/bin/python3
"""Writes the seed corpora of the fuzzers into fuzz/corpus/<fuzzer>/.

  fuzz/make_corpus.py [--bin BUILD/bin] [--only NAME]...

Seeds are small valid inputs, the starting points libFuzzer mutates:

  artifact-loader     artifacts of a tiny GPT-2, LLaMA and Mixtral compiled by
                      megatron-translate and megatron-opt from --bin
                      (default build/bin): one rank, tp2 x dp2 with ZeRO-1,
                      two pipeline stages; and a minimal hand-written one
                      (one parameter, no command) with the runtime's
                      kArtifactVersion. Rerun after the artifact format
                      changes, or the seeds stop at the version check.
  safetensors         hand-written files: several dtypes, __metadata__, a
                      zero-element tensor, gaps, an empty header.
  token-data          train.bin files (16-bit tokens) followed by the bytes
                      TokenDataFuzzer takes its call arguments from.
  indexed-dataset     Megatron-LM indexed datasets (.idx then .bin, the
                      .idx's length in the last two bytes): uint16, int32
                      and int64 ids, several documents, a multimodal index.
  hf-config-import    the GPT-2 and LLaMA-family configs of examples/,
                      test/integration/Inputs and test/runtime/Inputs.
  compile             forward graphs of a tiny GPT-2 (two and four
                      layers), LLaMA and Mixtral, and three
                      lowered modules of them (pipeline stages, tp2 bf16,
                      pp2 of a Mixtral),
                      from the tools in --bin.

Only the standard library is used.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

# mtrt/Hash.h: FNV-1a with the runtime's offset basis.
FNV_OFFSET = 1469598103934665603
CHECKSUM_ZEROS = "fnv1a64:" + "0" * 16


def fnv1a(data):
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def write(name, file, data):
    directory = os.path.join(CORPUS, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, file), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def artifact_version():
    with open(os.path.join(ROOT, "runtime/include/mtrt/Artifact.h")) as f:
        match = re.search(r"kArtifactVersion\s*=\s*(\d+)", f.read())
    return int(match.group(1))


def with_checksum(document):
    """The artifact's text with its checksum, as writeArtifact makes it."""
    document = dict(document, checksum=CHECKSUM_ZEROS)
    text = json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"
    digest = "fnv1a64:%016x" % fnv1a(text.encode())
    return text.replace(CHECKSUM_ZEROS, digest, 1)


TINY_GPT2 = {"model_type": "gpt2", "vocab_size": 8, "n_positions": 4,
             "n_embd": 4, "n_head": 2, "n_layer": 1, "embd_pdrop": 0.0,
             "attn_pdrop": 0.0, "resid_pdrop": 0.0}
TINY_LLAMA = {"model_type": "llama", "vocab_size": 8, "hidden_size": 4,
              "intermediate_size": 8, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 1,
              "max_position_embeddings": 4, "tie_word_embeddings": True}
# Three experts, two per token: the mixture of experts' kernels and ops.
TINY_MIXTRAL = dict(TINY_LLAMA, model_type="mixtral", num_local_experts=3,
                    num_experts_per_tok=2)
# Qwen2-MoE's shared expert and its sigmoid gate beside the routed experts.
TINY_QWEN2_MOE = dict(TINY_LLAMA, model_type="qwen2_moe", num_experts=3,
                      num_experts_per_tok=2, moe_intermediate_size=4,
                      shared_expert_intermediate_size=4)
# OLMo2's norms after the sublayers and over the whole projections.
TINY_OLMO2 = dict(TINY_LLAMA, model_type="olmo2", pad_token_id=None)
# SmolLM3: a layer without the rotary embedding (NoPE).
TINY_SMOLLM3 = dict(TINY_LLAMA, model_type="smollm3", pad_token_id=None,
                    num_hidden_layers=2, no_rope_layers=[1, 0])
# Granite's multipliers: scales of the embeddings, sublayers and logits.
TINY_GRANITE = dict(TINY_LLAMA, model_type="granite", embedding_multiplier=12.0,
                    residual_multiplier=0.22, attention_multiplier=0.125,
                    logits_scaling=16.0)
# Phi-3: its projections stored as rows of fused tensors (mt.fused_in).
TINY_PHI3 = dict(TINY_LLAMA, model_type="phi3", pad_token_id=None)
# Gemma: zero-centered norms (scale 1 + w), GeGLU, embeddings times sqrt(h).
TINY_GEMMA = dict(TINY_LLAMA, model_type="gemma", hidden_act="gelu",
                  hidden_activation="gelu_pytorch_tanh", head_dim=4,
                  pad_token_id=None)
# Gemma 2: norms around the sublayers, soft-capped scores and logits, a
# window in layer 0.
TINY_GEMMA2 = dict(TINY_GEMMA, model_type="gemma2", num_hidden_layers=2,
                   query_pre_attn_scalar=8, attn_logit_softcapping=0.5,
                   final_logit_softcapping=3.0, sliding_window=1)
# Gemma 3: q_norm/k_norm of each head, a windowed layer with its own base.
TINY_GEMMA3 = dict(TINY_GEMMA, model_type="gemma3_text", num_hidden_layers=2,
                   sliding_window=1, sliding_window_pattern=2,
                   rope_local_base_freq=10.0)


def compiler_tools(bindir, missing):
    """megatron-translate and megatron-opt in `bindir`, or None (saying
    `missing`, what the corpus then lacks) where they are not built."""
    translate = os.path.join(bindir, "megatron-translate")
    opt = os.path.join(bindir, "megatron-opt")
    if not (os.access(translate, os.X_OK) and os.access(opt, os.X_OK)):
        print(f"make_corpus: no megatron-translate/megatron-opt in {bindir}: "
              + missing, file=sys.stderr)
        return None
    return translate, opt


def forward_graph(translate, config, batch, seq, flags=()):
    """`config` imported as megatron-translate --import-hf-config does (with
    the import `flags`): the forward graph's text."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        return subprocess.run(
            [translate, "--import-hf-config", path, "--micro-batch-size",
             str(batch), "--seq-length", str(seq), *flags],
            check=True, capture_output=True).stdout


def artifacts(bindir):
    name = "artifact-loader"
    minimal = {
        "format": "megatron-mlir-artifact", "version": artifact_version(),
        "world_size": 1,
        "params": [{"name": "w", "dtype": "f32", "shape": [2],
                    "init": {"kind": "zeros"}}],
        "programs": [{"stage": 0, "arena_bytes": 8, "persistent_bytes": 8,
                      "buffers": [{"id": 0, "offset": 0, "dtype": "f32",
                                   "shape": [2], "kind": "param",
                                   "name": "w"}],
                      "commands": [], "outputs": {}}]}
    write(name, "minimal.mtx", with_checksum(minimal))

    tools = compiler_tools(bindir, "only the hand-written artifact seed")
    if not tools:
        return
    translate, opt = tools
    two_layers = dict(TINY_GPT2, n_layer=2)
    cases = [("gpt2-1rank.mtx", TINY_GPT2, 1, ""),
             ("gpt2-tp2-dp2-zero1.mtx", TINY_GPT2, 2, "tp=2 dp=2 zero=1"),
             ("gpt2-pp2.mtx", two_layers, 2, "pp=2 microbatches=2"),
             ("llama-1rank.mtx", TINY_LLAMA, 1, ""),
             ("mixtral-1rank.mtx", TINY_MIXTRAL, 2, ""),
             # Expert parallelism: per-rank expert names, the exchanges.
             ("mixtral-dp2-ep2.mtx", dict(TINY_MIXTRAL, num_local_experts=4),
              2, "dp=2 ep=2"),
             # ZeRO over an expert's replicas: pieces counted over them,
             # the strided reduce-scatter, slice and all-gather.
             ("mixtral-dp4-ep2-zero2.mtx",
              dict(TINY_MIXTRAL, num_local_experts=4), 4, "dp=4 ep=2 zero=2"),
             # Token dropping: a capacity's route, rows and exchanges.
             ("mixtral-capacity-dp2-ep2.mtx",
              dict(TINY_MIXTRAL, num_local_experts=4), 2,
              "dp=2 ep=2 fuse=false", ("--moe-expert-capacity-factor", "0.5")),
             ("qwen2-moe-1rank.mtx", TINY_QWEN2_MOE, 2, ""),
             # The router z-loss under a pipeline: its scalar sent on.
             ("mixtral-zloss-pp2.mtx", dict(TINY_MIXTRAL, num_hidden_layers=2),
              2, "pp=2 microbatches=2 fuse=false",
              ("--moe-z-loss-coeff", "0.01")),
             ("olmo2-1rank.mtx", TINY_OLMO2, 1, ""),
             ("granite-1rank.mtx", TINY_GRANITE, 1, ""),
             ("phi3-1rank.mtx", TINY_PHI3, 1, ""),
             ("gemma-1rank-unfused.mtx", TINY_GEMMA, 1, "fuse=false"),
             ("gemma2-1rank-unfused.mtx", TINY_GEMMA2, 1, "fuse=false"),
             ("gemma3-1rank.mtx", TINY_GEMMA3, 1, ""),
             # Accumulating weight-gradient GEMMs (a third input written
             # in place) and the bf16 kernels.
             ("gpt2-bf16-accumulate.mtx", TINY_GPT2, 2,
              "precision=bf16 microbatches=2")]
    with tempfile.TemporaryDirectory() as tmp:
        for file, config, batch, pipeline, *flags in cases:
            model = forward_graph(translate, config, batch, 2,
                                  flags[0] if flags else ())
            flag = "--mt-train-pipeline" + (f"={pipeline}" if pipeline else "")
            trained = subprocess.run([opt, flag], input=model, check=True,
                                     capture_output=True).stdout
            out = os.path.join(tmp, file)
            subprocess.run([translate, "--export-artifact", "-o", out],
                           input=trained, check=True)
            with open(out, "rb") as f:
                write(name, file, f.read())


def safetensors_file(tensors, metadata=None, pad=True, gap=0):
    """tensors: [(name, dtype, shape, bytes)] in data order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        data += b"\0" * gap
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors():
    name = "safetensors"
    f32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)
    write(name, "f32-2x2.safetensors",
          safetensors_file([("w", "F32", [2, 2], f32)]))
    write(name, "mixed-metadata.safetensors", safetensors_file(
        [("wte.weight", "F16", [2], struct.pack("<2e", 1.0, 2.0)),
         ("h.0.ln.bias", "BF16", [1, 2], b"\x80\x3f\x00\x40"),
         ("step", "I64", [], struct.pack("<q", 7)),
         ("ids", "I32", [3], struct.pack("<3i", 1, 2, 3)),
         ("mask", "BOOL", [2], b"\x01\x00"),
         ("scale", "F64", [1], struct.pack("<d", 0.125))],
        metadata={"format": "pt", "save_id": "3"}))
    write(name, "empty-tensor-and-gap.safetensors", safetensors_file(
        [("empty", "F32", [0, 3], b""), ("u8", "U8", [3], b"abc")],
        gap=2, pad=False))
    write(name, "no-tensors.safetensors", safetensors_file([], metadata={}))


def token_tail(step, batch, seq, steps, vocab, wide=0):
    """The bytes TokenDataFuzzer reads its arguments from (the end of the
    input, last byte first): FuzzedDataProvider's ConsumeIntegralInRange
    takes one byte for ranges below 256, three for the vocabulary's."""
    tail = bytes([wide, step + 1, batch + 1, seq + 1, steps + 1])
    v = vocab + 1  # the range starts at -1
    tail += bytes([(v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF])
    return tail[::-1]


def token_data():
    name = "token-data"
    tokens = [(7 * i + 3) % 32 for i in range(65)]
    body = struct.pack(f"<{len(tokens)}H", *tokens)
    write(name, "65-tokens.bin", body + token_tail(1, 2, 8, 4, 32))
    write(name, "big-ids.bin",
          struct.pack("<5H", 0, 50256, 65535, 1, 2) + token_tail(0, 1, 4, 1,
                                                                  50257))
    write(name, "empty.bin", token_tail(0, 1, 1, 0, 1))


def indexed_dataset_input(tokens, fmt, code, documents=1, modes=False):
    """An IndexedDatasetFuzzer input: PREFIX.idx, PREFIX.bin, then the
    .idx's length (read from the end, most significant byte last)."""
    size = struct.calcsize(fmt)
    counts = [len(tokens) // documents + (1 if i < len(tokens) % documents
                                          else 0) for i in range(documents)]
    pointers, at = [], 0
    for count in counts:
        pointers.append(at)
        at += count * size
    idx = b"MMIDIDX\0\0" + struct.pack("<QBQQ", 1, code, documents,
                                        documents + 1)
    idx += struct.pack(f"<{documents}i", *counts)
    idx += struct.pack(f"<{documents}q", *pointers)
    idx += struct.pack(f"<{documents + 1}q", *range(documents + 1))
    if modes:
        idx += bytes(documents)
    body = struct.pack(f"<{len(tokens)}{fmt}", *tokens)
    return idx + body + bytes([len(idx) & 0xFF, len(idx) >> 8])


def indexed_dataset():
    name = "indexed-dataset"
    tokens = [(7 * i + 3) % 32 for i in range(40)]
    write(name, "uint16-3-documents",
          indexed_dataset_input(tokens, "H", 8, documents=3))
    write(name, "int32-big-ids",
          indexed_dataset_input([0, 128255, 65536, 7, 70000], "i", 4))
    write(name, "int64-one-document", indexed_dataset_input(tokens, "q", 5))
    write(name, "uint8-multimodal",
          indexed_dataset_input(tokens, "B", 1, documents=4, modes=True))
    write(name, "empty", indexed_dataset_input([], "H", 8, documents=0))


def compile_inputs(bindir):
    """Forward graphs of the tiny GPT-2 and LLaMA (two layers, so that pp=2
    compiles; two key/value heads, so that tp=2 does), and two lowered
    modules: GPT-2 over two pipeline stages unfused, LLaMA tp2 in bf16."""
    name = "compile"
    tools = compiler_tools(bindir, "no compile seeds")
    if not tools:
        return
    translate, opt = tools
    gpt2 = dict(TINY_GPT2, n_layer=2)
    llama = dict(TINY_LLAMA, num_hidden_layers=2, num_key_value_heads=2)
    # Four layers: pp=2 with two virtual stages (interleaved).
    write(name, "gpt2-4layer-forward.mlir",
          forward_graph(translate, dict(gpt2, n_layer=4), 2, 2))
    for model, config, lowered, pipeline, *rest in [
            ("gpt2", gpt2, "gpt2-pp2-lowered.mlir",
             "pp=2 microbatches=2 fuse=false"),
            ("llama", llama, "llama-tp2-bf16-lowered.mlir",
             "tp=2 precision=bf16"),
            ("mixtral", dict(TINY_MIXTRAL, num_hidden_layers=2),
             "mixtral-pp2-lowered.mlir", "pp=2 microbatches=2"),
            ("qwen2-moe", dict(TINY_QWEN2_MOE, num_key_value_heads=2),
             "qwen2-moe-tp2-lowered.mlir", "tp=2 sp=true"),
            ("olmo2", dict(TINY_OLMO2, num_hidden_layers=2),
             "olmo2-pp2-lowered.mlir", "pp=2 microbatches=2"),
            ("gemma", TINY_GEMMA, "gemma-lowered.mlir", "fuse=true"),
            ("gemma2", TINY_GEMMA2, "gemma2-tp1-lowered.mlir", "fuse=true"),
            ("mixtral-capacity", dict(TINY_MIXTRAL, num_local_experts=4),
             "mixtral-capacity-ep2-lowered.mlir", "dp=2 ep=2",
             ("--moe-expert-capacity-factor", "1.25",
              "--moe-token-drop-policy", "position")),
            ("mixtral-zloss", dict(TINY_MIXTRAL, num_hidden_layers=2),
             "mixtral-zloss-pp2-lowered.mlir", "pp=2 microbatches=2",
             ("--moe-z-loss-coeff", "0.01"))]:
        flags = rest[0] if rest else ()
        forward = forward_graph(translate, config, 2, 2, flags)
        write(name, f"{model}-forward.mlir", forward)
        write(name, lowered, subprocess.run(
            [opt, f"--mt-train-pipeline={pipeline}"], input=forward,
            check=True, capture_output=True).stdout)

def hf_configs():
    name = "hf-config-import"
    for directory in ["examples/gpt2", "examples/llama",
                      "test/integration/Inputs", "test/runtime/Inputs"]:
        full = os.path.join(ROOT, directory)
        for file in sorted(os.listdir(full)):
            if file.endswith(".json"):
                shutil.copy(os.path.join(full, file),
                            os.path.join(CORPUS, name, file))
    write(name, "tiny-gpt2.json", json.dumps(TINY_GPT2, indent=2) + "\n")
    write(name, "tiny-llama.json", json.dumps(TINY_LLAMA, indent=2) + "\n")
    write(name, "tiny-mixtral.json",
          json.dumps(TINY_MIXTRAL, indent=2) + "\n")
    write(name, "tiny-qwen2-moe.json",
          json.dumps(TINY_QWEN2_MOE, indent=2) + "\n")
    write(name, "tiny-olmo2.json", json.dumps(TINY_OLMO2, indent=2) + "\n")
    write(name, "tiny-smollm3.json",
          json.dumps(TINY_SMOLLM3, indent=2) + "\n")
    write(name, "tiny-granite.json",
          json.dumps(TINY_GRANITE, indent=2) + "\n")
    write(name, "tiny-gemma.json", json.dumps(TINY_GEMMA, indent=2) + "\n")
    write(name, "tiny-gemma2.json", json.dumps(TINY_GEMMA2, indent=2) + "\n")
    write(name, "tiny-gemma3.json", json.dumps(TINY_GEMMA3, indent=2) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--only", action="append",
                        choices=["artifact-loader", "safetensors",
                                 "token-data", "indexed-dataset",
                                 "hf-config-import", "compile"])
    args = parser.parse_args()
    makers = {"artifact-loader": lambda: artifacts(args.bin),
              "safetensors": safetensors, "token-data": token_data,
              "indexed-dataset": indexed_dataset,
              "hf-config-import": hf_configs,
              "compile": lambda: compile_inputs(args.bin)}
    for name, make in makers.items():
        if not args.only or name in args.only:
            os.makedirs(os.path.join(CORPUS, name), exist_ok=True)
            make()


if __name__ == "__main__":
    main()
