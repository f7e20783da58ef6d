"""What the CPU-backend benchmarks share: building and running artifacts.

Each benchmark compiles a small GPT-2 in several configurations with the
tools of build/bin, runs them interleaved on the CPU backend and appends a
section to its file of bench/results.
"""

import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")


def sh(cmd, **kwargs):
    """Runs a command, raising on failure; returns its CompletedProcess."""
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def import_gpt2(tmp, width, heads, layers, seq, batch, vocab=8192):
    """Writes a GPT-2 config (dropout 0) into `tmp` and imports it at
    micro-batch `batch`; returns the model's MLIR file."""
    config = {
        "model_type": "gpt2", "activation_function": "gelu_new",
        "vocab_size": vocab, "n_positions": seq, "n_embd": width,
        "n_head": heads, "n_layer": layers, "n_inner": None,
        "layer_norm_epsilon": 1e-5, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "resid_pdrop": 0.0,
    }
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    model = os.path.join(tmp, "model.mlir")
    sh([f"{BIN}/megatron-translate", "--import-hf-config", path,
        "--micro-batch-size", str(batch), "--seq-length", str(seq), "-o", model])
    return model


def compile_artifact(model, pipeline_options, artifact):
    """megatron-opt --mt-train-pipeline=OPTIONS, exported to `artifact`."""
    step = sh([f"{BIN}/megatron-opt", model,
               f"--mt-train-pipeline={pipeline_options}"]).stdout
    sh([f"{BIN}/megatron-translate", "--export-artifact", "-o", artifact], input=step)


def run_steps(artifact, steps, log):
    """megatron-run ARTIFACT for `steps` steps on the CPU backend, logging to
    `log`: (its planned peak in bytes, its logged steps as dicts)."""
    out = sh([f"{BIN}/megatron-run", artifact, "--steps", str(steps),
              "--quiet", "--log", log]).stdout
    peak = int(re.search(r"planned (\d+) B", out).group(1))
    with open(log) as f:
        return peak, [json.loads(line) for line in f if line.strip()]


def plan_bytes(line_name, out):
    """The bytes of memory plan line `line_name` in megatron-run's output."""
    return int(re.search(line_name + r"\s+[0-9.]+ MiB \((\d+) B\)",
                         out).group(1))


def run_ranks(ranks, artifact, steps, log, plan_lines):
    """megatron-run ARTIFACT on `ranks` CPU ranks under mpirun for `steps`
    steps, logging to `log`: (the plan's bytes of each of `plan_lines` and
    its planned peak as "peak", the logged steps as dicts)."""
    out = sh(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
              str(ranks), f"{BIN}/megatron-run", artifact, "--steps",
              str(steps), "--quiet", "--log", log]).stdout
    plan = {name: plan_bytes(name, out) for name in plan_lines}
    plan["peak"] = int(re.search(r"planned (\d+) B", out).group(1))
    with open(log) as f:
        return plan, [json.loads(line) for line in f if line.strip()]


def append_results(name, heading, lines):
    """Appends `lines` to bench/results/NAME (created with `heading`)."""
    path = os.path.join(ROOT, "bench", "results", name)
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write(heading)
        f.write("\n".join(lines) + "\n")
