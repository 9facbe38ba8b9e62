#!/usr/bin/env python3
"""torch_gpu.py: PyTorch's latency on the model corpus (corpus.py), the peer tasc is measured against.

    python3 bench/models/torch_gpu.py [--models a,b,...] [--modes eager,compile,cudagraphs]
        [--reps N] [--attn sdpa|eager] [--json FILE]

Per model: the network as export.py builds it (random init, seed 0, batch 1, eval mode) on the GPU,
strict FP32 (TF32 off for matmul and cuDNN, cudnn.benchmark on), timed in inference mode as eager,
torch.compile (default mode) and torch.compile(mode="reduce-overhead") (CUDA graphs): the median of
--reps CUDA-event timings after 10 warm-up calls (which include compilation). The text models use
PyTorch's fast attention (sdpa) by default; --attn eager times the exported (eager) form instead.
One JSON line per measurement on --json; a table on stdout. A failure is reported and the rest goes
on. Needs torch, torchvision, transformers and a GPU; no weights are downloaded.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "peers"))
from torch_peer import time_model  # noqa: E402  (one timing loop for every PyTorch peer)

MODES = ("eager", "compile", "cudagraphs")


def measure(name, mode, reps, attn, torch):
    model, args, _, _ = corpus.build(name, attn=attn)
    return time_model(model, args, mode, reps, torch)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(corpus.MODELS), help="comma-separated names (default: all)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated of %s" % ",".join(MODES))
    ap.add_argument("--reps", type=int, default=100, help="timed runs per measurement (%(default)s)")
    ap.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"), help="transformers attention (%(default)s)")
    ap.add_argument("--json", help="append one JSON line per measurement here")
    a = ap.parse_args()
    models = [m for m in a.models.split(",") if m]
    modes = [m for m in a.modes.split(",") if m]
    for m in models:
        if m not in corpus.MODELS:
            sys.exit("torch_gpu.py: unknown model '%s' (known: %s)" % (m, ", ".join(corpus.MODELS)))
    for m in modes:
        if m not in MODES:
            sys.exit("torch_gpu.py: unknown mode '%s' (known: %s)" % (m, ", ".join(MODES)))
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.cuda.get_device_name(0)
    out = open(a.json, "a") if a.json else None
    print("%-20s %-11s %10s %9s" % ("model", "mode", "ms", "setup s"), flush=True)
    for m in models:
        for mode in modes:
            rec = {"model": m, "mode": mode, "batch": 1, "attn": a.attn, "device": dev, "torch": torch.__version__}
            try:
                ms, setup = measure(m, mode, a.reps, a.attn, torch)
                rec.update(ms=round(ms, 4), setup_s=round(setup, 1))
                print("%-20s %-11s %10.3f %9.1f" % (m, mode, ms, setup), flush=True)
            except Exception as e:  # report and go on: one model must not sink the table
                rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
                print("%-20s %-11s failed: %s" % (m, mode, rec["error"]), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    if out:
        out.close()


if __name__ == "__main__":
    main()
