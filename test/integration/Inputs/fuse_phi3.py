#!/usr/bin/python3
"""Writes a run's saved parameters as Phi-3's checkpoints name them.

  fuse_phi3.py IN.safetensors OUT.safetensors

A compiled Phi-3 keeps its q, k and v projections and its gate and up
projections as parameters of their own, which --save-params writes under
Llama's names; Hugging Face's Phi-3 holds each layer's q, k and v rows one
after another in self_attn.qkv_proj.weight and its gate and up rows in
mlp.gate_up_proj.weight. This concatenates them so, for comparing a run
against llama_reference.py's Phi-3 by name.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

FUSED = {"self_attn.qkv_proj.weight": ("self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                       "self_attn.v_proj.weight"),
         "mlp.gate_up_proj.weight": ("mlp.gate_proj.weight", "mlp.up_proj.weight")}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tensors = read_safetensors(sys.argv[1])
    out = {}
    for name, tensor in tensors.items():
        for fused, pieces in FUSED.items():
            piece = next((p for p in pieces if name.endswith("." + p)), None)
            if piece:
                prefix = name[: -len(piece)]
                if piece == pieces[0]:  # the fused tensor, in its place
                    out[prefix + fused] = np.concatenate([tensors[prefix + p] for p in pieces])
                break
        else:
            out[name] = tensor
    write_safetensors(sys.argv[2], out)


if __name__ == "__main__":
    main()
