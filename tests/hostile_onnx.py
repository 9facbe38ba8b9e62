#!/usr/bin/env python3
"""hostile_onnx.py OUT: writes the ONNX models tests/cli_hostile.sh feeds to tasc, with a small
protobuf wire-format writer (no onnx package needed). Field numbers are onnx.proto's.

  deep_graph.onnx   3,000 levels of subgraphs (If.then_branch): refused before unpacking
  deep_type.onnx    3,000 levels of sequence types in a graph input's type: refused likewise
  reshape_big.onnx  Reshape to (2^62, 8): the product overflows int64
  split_wrap.onnx   Split sizes (2^63-1, 2^63-1, 6) that sum to the dimension 4 modulo 2^64
  neg_dim.onnx      an input of shape (1, -3)
  ext.onnx          Add(x, w), w (4 floats) in external data 'w.bin' (the test makes w.bin)
  init_out.onnx     the only output is an initializer
  pow_half.onnx     Pow(x, 0.5): NaN for negative inputs
  clip_max.onnx     Clip(x, max=0.5) without min
"""
import os
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def f_int(field, v):
    return varint(field << 3) + varint(v)


def f_len(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_float(field, v):
    return varint(field << 3 | 5) + struct.pack("<f", v)


FLOAT, INT64 = 1, 7


def tensor_type(elem, dims):
    shape = b"".join(f_len(1, f_int(1, d)) for d in dims)
    return f_len(1, f_int(1, elem) + f_len(2, shape))


def value_info(name, elem=FLOAT, dims=None):
    return f_len(1, name) + (f_len(2, tensor_type(elem, dims)) if dims is not None else b"")


def init_i64(name, vals):
    return f_int(1, len(vals)) + f_int(2, INT64) + b"".join(f_int(7, v) for v in vals) + f_len(8, name)


def init_f32(name, vals, scalar=False):
    dims = b"" if scalar else f_int(1, len(vals))
    return dims + f_int(2, FLOAT) + b"".join(f_float(4, v) for v in vals) + f_len(8, name)


def node(op, ins, outs, attrs=b""):
    return (b"".join(f_len(1, i) for i in ins) + b"".join(f_len(2, o) for o in outs) + f_len(3, op) +
            f_len(4, op) + attrs)


def graph(nodes=(), inits=(), inputs=(), outputs=()):
    return (b"".join(f_len(1, n) for n in nodes) + b"".join(f_len(5, t) for t in inits) +
            b"".join(f_len(11, v) for v in inputs) + b"".join(f_len(12, v) for v in outputs))


def model(g):
    return f_int(1, 8) + f_len(8, f_int(2, 17)) + f_len(7, g)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = {}
    g = b""
    for _ in range(3000):
        attr = f_len(1, "then_branch") + f_int(20, 5) + f_len(6, g)
        g = f_len(1, f_len(4, "If") + f_len(5, attr))
    models["deep_graph"] = model(g)
    t = tensor_type(FLOAT, [1])
    for _ in range(3000):
        t = f_len(4, f_len(1, t))
    models["deep_type"] = model(graph(inputs=[f_len(1, "x") + f_len(2, t)]))
    models["reshape_big"] = model(graph([node("Reshape", ["x", "s"], ["y"])], [init_i64("s", [1 << 62, 8])],
                                        [value_info("x", dims=[2, 3])], [value_info("y")]))
    models["split_wrap"] = model(graph([node("Split", ["x", "sp"], ["a", "b", "c"])],
                                       [init_i64("sp", [2**63 - 1, 2**63 - 1, 6])], [value_info("x", dims=[4])],
                                       [value_info("a")]))
    models["neg_dim"] = model(graph([node("Relu", ["x"], ["y"])], [], [value_info("x", dims=[1, -3])],
                                    [value_info("y")]))
    ext = (f_int(1, 4) + f_int(2, FLOAT) + f_len(8, "w") + f_len(13, f_len(1, "location") + f_len(2, "w.bin")) +
           f_int(14, 1))
    models["ext"] = model(graph([node("Add", ["x", "w"], ["y"])], [ext], [value_info("x", dims=[4])],
                                [value_info("y", dims=[4])]))
    models["init_out"] = model(graph([], [init_f32("w", [1, -2, 3, -4])], [value_info("x", dims=[4])],
                                     [value_info("w", dims=[4])]))
    models["pow_half"] = model(graph([node("Pow", ["x", "e"], ["y"])], [init_f32("e", [0.5], scalar=True)],
                                     [value_info("x", dims=[2, 8])], [value_info("y", dims=[2, 8])]))
    models["clip_max"] = model(graph([node("Clip", ["x", "", "hi"], ["y"])], [init_f32("hi", [0.5], scalar=True)],
                                     [value_info("x", dims=[2, 8])], [value_info("y", dims=[2, 8])]))
    for name, data in models.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)


main()
