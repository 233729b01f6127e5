#!/usr/bin/env python3
"""Writes the inputs and the expected output of this case (no numpy needed).

out = x * scale + offset + bias in float32, where the three scalars reach the
kernel by value, each converted from an input of another dtype:
  scale  f32[]  from a bfloat16 input (0-d; raw bits in scale.bits.npy)
  offset f32[]  from an int32 input of shape (1,)
  bias   s32[]  from a float32 input (0-d, a whole number)
Run from this folder: python3 generate.py
"""
import struct


def npy(path, descr, shape, fmt, values):
    shape_text = "()" if not shape else "(" + ", ".join(str(d) for d in shape) + (",)" if len(shape) == 1 else ")")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(b"".join(struct.pack("<" + fmt, v) for v in values))


def f32(v):  # round to float32 (double rounding is exact for one + or *)
    return struct.unpack("<f", struct.pack("<f", v))[0]


x = [f32((i - 512) / 8) for i in range(8 * 128)]
scale, scale_bits = 1.5, 0x3FC0  # bf16 1.5
offset = -3
bias = 4.0
npy("inputs/x.npy", "<f4", [8, 128], "f", x)
npy("inputs/scale.npy", "<f4", [], "f", [scale])
npy("inputs/scale.bits.npy", "<u2", [], "H", [scale_bits])
npy("inputs/offset.npy", "<i4", [1], "i", [offset])
npy("inputs/bias.npy", "<f4", [], "f", [bias])
npy("expected.npy", "<f4", [8, 128], "f", [f32(f32(f32(v * scale) + offset) + int(bias)) for v in x])
