#!/usr/bin/env python3
"""Adds a connection that skips every layer to an imported GPT-2: the sum
of the embeddings (the first mt.bias_add, before the embedding dropout) is
added to the last layer's output, before the final layer norm. Under
pipeline parallelism the connection crosses stages in both passes.

usage: add_skip_connection.py IN.mlir OUT.mlir
"""
import re
import sys

lines = open(sys.argv[1]).read().split("\n")
embeddings = next(l for l in lines if "mt.bias_add" in l)
value = embeddings.split("=")[0].strip()
kind = embeddings.rsplit(":", 1)[1].split(",")[0].strip()
final = next(i for i, l in enumerate(lines) if "mt.layer_norm" in l and "mt.layer =" not in l)
m = re.match(r"(\s*)(%\S+) = mt.layer_norm (%\S+),(.*)", lines[final])
lines[final] = (f"{m.group(1)}%skip = mt.add {m.group(3)}, {value} : {kind}\n"
                f"{m.group(1)}{m.group(2)} = mt.layer_norm %skip,{m.group(4)}")
open(sys.argv[2], "w").write("\n".join(lines))
