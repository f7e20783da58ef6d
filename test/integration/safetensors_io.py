"""Reads and writes safetensors files with numpy only, for the tests.

The format: an 8-byte little-endian header length, a JSON header mapping each
tensor's name to its dtype, shape and data offsets (relative to the end of
the header), then the data. The header is padded with spaces to a multiple
of 8 bytes, as the Hugging Face library writes it.
"""

import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).copy()
    return tensors


def write_safetensors(path, tensors):
    """Writes `tensors` (name -> numpy array) in order, keeping each dtype."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        blob = array.tobytes()
        header[name] = {
            "dtype": NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
