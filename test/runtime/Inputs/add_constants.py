#!/usr/bin/env python3
"""Puts tensor constants into an imported GPT-2, as hand-written IR has
them.

usage: add_constants.py IN.mlir OUT.mlir (activation | param NAME) (splat | ramp)

  activation  adds a constant of the activations' shape (batch, sequence,
              hidden) to the embeddings' sum, before the embedding dropout;
  param NAME  reads a constant where the step read the parameter NAME
              (which stays, unread);
  splat       the constant is 0.5 everywhere; ramp: 0, 0.01, 0.02, ...
"""
import re
import sys

source, target, mode = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(source).read().split("\n")


def dense(shape, values):
    if values == "splat":
        return "5.000000e-01"
    count = 1
    for dim in shape:
        count *= dim
    flat = [f"{i / 100:e}" for i in range(count)]

    def nest(items, dims):
        if len(dims) == 1:
            return "[" + ", ".join(items) + "]"
        step = len(items) // dims[0]
        return "[" + ", ".join(nest(items[i * step:(i + 1) * step], dims[1:])
                               for i in range(dims[0])) + "]"
    return nest(flat, shape)


if mode == "activation":
    at = next(i for i, l in enumerate(lines) if "mt.bias_add" in l)
    m = re.match(r"(\s*)(%\S+) = mt.bias_add .*: (tensor<[^>]*>),", lines[at])
    indent, value, kind = m.groups()
    nxt = lines[at + 1]
    assert value + " " in nxt, nxt
    lines[at + 1] = nxt.replace(value + " ", "%shifted ", 1)
    lines.insert(at + 1, f"{indent}%shifted = mt.add {value}, %shift : {kind}")
    shape = [int(d) for d in kind[len("tensor<"):-1].split("x")[:-1]]
    lines.insert(at + 1, f"{indent}%shift = arith.constant "
                         f"dense<{dense(shape, sys.argv[4])}> : {kind}")
elif mode == "param":
    name, values = sys.argv[4], sys.argv[5]
    signature = next(i for i, l in enumerate(lines) if "func.func" in l)
    args = re.findall(r'(%arg\d+): tensor<([0-9x]+)xf32> \{((?:[^{}]|\{[^{}]*\})*)\}',
                      lines[signature])
    arg, dims = next((a, d) for a, d, attrs in args
                     if f'mt.param = "{name}"' in attrs)
    shape = [int(d) for d in dims.split("x")]
    body = "\n".join(lines[signature + 1:])
    body = re.sub(re.escape(arg) + r"\b", "%constant", body)
    lines = lines[:signature + 1] + [
        f"    %constant = arith.constant dense<{dense(shape, values)}> : tensor<{dims}xf32>"
    ] + body.split("\n")
else:
    sys.exit(f"add_constants.py: unknown mode '{mode}'")
open(target, "w").write("\n".join(lines))
