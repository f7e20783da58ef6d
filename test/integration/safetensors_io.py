"""Reads and writes safetensors files with numpy only, for the tests.

The format: an 8-byte little-endian header length, a JSON header mapping each
tensor's name to its dtype, shape and data offsets (relative to the end of
the header), then the data. The header is padded with spaces to a multiple
of 8 bytes, as the Hugging Face library writes it.
"""

import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


class BF16:
    """A bfloat16 tensor (numpy has no such dtype): its bits as uint16."""

    def __init__(self, bits):
        self.bits = np.ascontiguousarray(bits, dtype=np.uint16)

    @staticmethod
    def round(values):
        """float32 values rounded to bfloat16 (to nearest even)."""
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return BF16(bits.astype(np.uint16))

    def widen(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


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
        if info["dtype"] == "BF16":
            bits = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=np.uint16)
            tensors[name] = BF16(bits.reshape(info["shape"]).copy())
            continue
        array = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).copy()
    return tensors


def write_safetensors(path, tensors):
    """Writes `tensors` (name -> numpy array) in order, keeping each dtype."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        dtype = "BF16" if isinstance(array, BF16) else None
        array = array.bits if dtype else np.ascontiguousarray(array)
        blob = array.tobytes()
        header[name] = {
            "dtype": dtype or NAMES[array.dtype],
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
