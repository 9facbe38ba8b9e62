#!/usr/bin/env python3
"""export.py: the model corpus (corpus.py) exported to ONNX with onnxruntime reference outputs.

    python3 bench/models/export.py [--out DIR] [--models a,b,...] [--exporter torchscript|dynamo]

Per model, built by PyTorch with random (default) initialisation and seed 0, batch 1, eval mode,
exported with opset 17 (static shapes), into DIR (default bench/models/out, git-ignored):
    NAME.onnx                  the model with its weights embedded
    NAME.graph.onnx            the same graph, every float initializer of 1 KiB or more stored as
                               external data in NAME.weights.bin, which is NOT written: the file
                               for `tasc ... --random-weights` (the GPU machine; small and shape
                               constants stay embedded)
    NAME.in.<input>.npy        the input (seeded normal image, or token ids)
    NAME.out.<output>.npy      onnxruntime's output on it (CPU, default optimisation level)
    manifest.jsonl             one line per model: node count, exporter, the PyTorch-vs-onnxruntime
                               relative L2 error, output std, input sensitivity (rel L2 between the
                               outputs on two inputs: near 0 means the output is only the last
                               biases), sizes, versions (or the export error)
The TorchScript exporter (dynamo=False, the default here) is tried first; where it lacks an op
(gpt2: aten::diff) the dynamo exporter is used and the manifest says so.
The environment: `scripts/setup.sh --corpus` (torch, torchvision, transformers, onnx, onnxscript,
onnxruntime in ~/.cache/tasc/corpus-venv); run this with that venv's python.
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

EXTERNAL_MIN_BYTES = 1024  # onnx's own default threshold for external data


def rel_l2(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def graph_only(src, dst, weights_name):
    """dst: src with its float initializers >= EXTERNAL_MIN_BYTES pointing into weights_name, a
    file that is not written. Returns (initializers moved, bytes moved)."""
    import onnx
    from onnx import external_data_helper as ext
    m = onnx.load(src)
    off, moved = 0, 0
    for t in m.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT or not t.HasField("raw_data"):
            continue
        n = len(t.raw_data)
        if n < EXTERNAL_MIN_BYTES:
            continue
        ext.set_external_data(t, weights_name, offset=off, length=n)
        t.ClearField("raw_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        off += (n + 63) // 64 * 64
        moved += 1
    onnx.save(m, dst)
    return moved, off


def onnx_export(model, inputs, path, in_names, out_names, exporter):
    import torch
    kw = {"dynamo": exporter == "dynamo"}
    if exporter == "torchscript":
        kw["do_constant_folding"] = True
    torch.onnx.export(model, inputs, path, opset_version=17, input_names=in_names, output_names=out_names, **kw)


def other_input(x):
    """A second input of x's shape and type (another seed), to see whether the output depends on it."""
    import numpy as np
    rng = np.random.RandomState(1)
    if np.issubdtype(x.dtype, np.integer):
        return rng.randint(0, max(int(x.max()) + 1, 2), size=x.shape).astype(x.dtype)
    return rng.standard_normal(size=x.shape).astype(x.dtype)


def export_one(name, out, exporter):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    rec = {"model": name, "exporter": exporter, "opset": 17, "torch": torch.__version__,
           "onnxruntime": ort.__version__}
    t0 = time.time()
    model, inputs, in_names, out_names = corpus.build(name)
    with torch.no_grad():
        want = model(*inputs)
    path = os.path.join(out, name + ".onnx")
    try:
        onnx_export(model, inputs, path, in_names, out_names, exporter)
    except Exception as e:  # noqa: BLE001 -- the TorchScript exporter lacks some ops (gpt2: aten::diff)
        if exporter != "torchscript":
            raise
        rec["torchscript_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        rec["exporter"] = "dynamo"
        onnx_export(model, inputs, path, in_names, out_names, "dynamo")
    m = onnx.load(path)
    rec["nodes"] = len(m.graph.node)
    rec["onnx_bytes"] = os.path.getsize(path)
    # the ONNX graph's own names (the dynamo exporter may rename), for the .npy file names
    in_names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    out_names = [o.name for o in m.graph.output]
    feeds = {}
    for k, x in zip(in_names, inputs):
        arr = x.numpy()
        feeds[k] = arr
        np.save(os.path.join(out, "%s.in.%s.npy" % (name, k)), arr)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    for k, y in zip(out_names, got):
        np.save(os.path.join(out, "%s.out.%s.npy" % (name, k)), y)
    rec["inputs"] = {k: list(v.shape) for k, v in feeds.items()}
    rec["outputs"] = {k: list(np.asarray(y).shape) for k, y in zip(out_names, got)}
    rec["torch_vs_ort_rel_l2"] = rel_l2(got[0], want.numpy())
    rec["output_std"] = float(np.std(got[0]))
    # how much the output moves with the input: near 0, the output is the last biases alone (an
    # init whose activations vanish) and an agreement check on it says little about the layers
    got2 = sess.run(None, {k: other_input(v) for k, v in feeds.items()})
    rec["input_sensitivity"] = rel_l2(got2[0], got[0])
    moved, nbytes = graph_only(path, os.path.join(out, name + ".graph.onnx"), name + ".weights.bin")
    rec["graph_onnx_bytes"] = os.path.getsize(os.path.join(out, name + ".graph.onnx"))
    rec["external_initializers"] = moved
    rec["external_bytes"] = nbytes
    rec["seconds"] = round(time.time() - t0, 1)
    return rec


def sensitivity_only(out, names):
    import numpy as np
    import onnxruntime as ort
    with open(os.path.join(out, "manifest.jsonl"), "a") as man:
        for n in names:
            path = os.path.join(out, n + ".onnx")
            if not os.path.exists(path):
                continue
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            feeds = {i.name: np.load(os.path.join(out, "%s.in.%s.npy" % (n, i.name))) for i in sess.get_inputs()}
            y1 = sess.run(None, feeds)[0]
            y2 = sess.run(None, {k: other_input(v) for k, v in feeds.items()})[0]
            rec = {"model": n, "input_sensitivity": rel_l2(y2, y1)}
            print("%-20s input sensitivity %.3g" % (n, rec["input_sensitivity"]), flush=True)
            man.write(json.dumps(rec) + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output folder (%(default)s)")
    ap.add_argument("--models", default=",".join(corpus.MODELS), help="comma-separated names (default: all)")
    ap.add_argument("--exporter", default="torchscript", choices=("torchscript", "dynamo"),
                    help="torch.onnx.export(dynamo=False) (default) or the dynamo exporter")
    ap.add_argument("--sensitivity-only", action="store_true",
                    help="only measure the input sensitivity of models already exported (appended to the manifest)")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n]
    if a.sensitivity_only:
        sys.exit(sensitivity_only(a.out, names))
    for n in names:
        if n not in corpus.MODELS:
            sys.exit("export.py: unknown model '%s' (known: %s)" % (n, ", ".join(corpus.MODELS)))
    os.makedirs(a.out, exist_ok=True)
    import torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    failed = 0
    with open(os.path.join(a.out, "manifest.jsonl"), "a") as man:
        for n in names:
            try:
                rec = export_one(n, a.out, a.exporter)
                print("%-20s %5d nodes  %s  torch vs onnxruntime rel_l2 %.2e  output std %.3g  input sensitivity "
                      "%.2g  %.0f s" % (n, rec["nodes"], rec["exporter"], rec["torch_vs_ort_rel_l2"], rec["output_std"],
                                        rec["input_sensitivity"], rec["seconds"]), flush=True)
            except Exception as e:  # one model must not sink the corpus: report it and go on
                failed += 1
                rec = {"model": n, "exporter": a.exporter, "error": "%s: %s" % (type(e).__name__, e)}
                print("%-20s export failed: %s" % (n, rec["error"].splitlines()[0][:300]), flush=True)
                traceback.print_exc(file=sys.stderr)
            man.write(json.dumps(rec) + "\n")
            man.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
