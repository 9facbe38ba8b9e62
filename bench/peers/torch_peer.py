#!/usr/bin/env python3
"""torch_peer.py: PyTorch's latency on the zoo models' counterparts, the peer tasc is measured against.

Per model and batch: eager, torch.compile (default mode) and torch.compile(mode="reduce-overhead")
(CUDA graphs), strict FP32 (TF32 off for matmul and cuDNN), random init (no weights downloaded),
median of --reps CUDA-event timings after warm-up. One JSON line per measurement on --json, and a
table on stdout. Run on the GPU machine (torch, torchvision, transformers there).

  python3 bench/peers/torch_peer.py --models resnet50,bert --batches 1,8,32 --modes eager,cudagraphs \
      --json OUT/torch.jsonl
"""
import argparse
import json
import os
import statistics
import sys
import time

# the zoo name -> how PyTorch builds the same network and its input
ZOO = {
    "resnet50": ("torchvision", "resnet50", (3, 224, 224)),
    "resnext50": ("torchvision", "resnext50_32x4d", (3, 224, 224)),
    "inception_v3": ("torchvision", "inception_v3", (3, 299, 299)),
    "squeezenet": ("torchvision", "squeezenet1_1", (3, 224, 224)),
    "bert": ("transformers", "bert-base", 128),
}
MODES = ("eager", "compile", "cudagraphs")


def build(name, batch, torch):
    kind, arch, shape = ZOO[name]
    if kind == "torchvision":
        import torchvision
        kw = {"aux_logits": False, "init_weights": True} if arch == "inception_v3" else {}
        model = getattr(torchvision.models, arch)(weights=None, **kw)
        x = torch.randn(batch, *shape)
        return model, (x,)
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig())  # bert-base: 12 layers, hidden 768, 12 heads
    ids = torch.randint(0, 30522, (batch, shape))
    return model, (ids,)


def time_it(fn, args, reps, torch):
    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*args)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def measure(name, batch, mode, reps, torch):
    model, args = build(name, batch, torch)
    return time_model(model, args, mode, reps, torch)


def time_model(model, args, mode, reps, torch):
    """(median ms, setup s) of model(*args) on the GPU in one of MODES."""
    model = model.cuda().eval()
    args = tuple(a.cuda() for a in args)
    t0 = time.time()
    if mode == "eager":
        fn = model
    elif mode == "compile":
        fn = torch.compile(model)
    else:
        fn = torch.compile(model, mode="reduce-overhead")
    with torch.inference_mode():
        ms = time_it(fn, args, reps, torch)
    return ms, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names (%(default)s)")
    ap.add_argument("--batches", default="1", help="comma-separated batch sizes (%(default)s)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated of %s" % ",".join(MODES))
    ap.add_argument("--reps", type=int, default=100, help="timed runs per measurement (%(default)s)")
    ap.add_argument("--json", help="append one JSON line per measurement here")
    a = ap.parse_args()
    models = a.models.split(",")
    modes = a.modes.split(",")
    for m in models:
        if m not in ZOO:
            sys.exit("torch_peer.py: unknown model '%s' (known: %s)" % (m, ", ".join(ZOO)))
    for m in modes:
        if m not in MODES:
            sys.exit("torch_peer.py: unknown mode '%s' (known: %s)" % (m, ", ".join(MODES)))
    batches = [int(b) for b in a.batches.split(",")]
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.cuda.get_device_name(0)
    out = open(a.json, "a") if a.json else None
    print("%-14s %5s %-11s %10s %9s" % ("model", "batch", "mode", "ms", "setup s"))
    for m in models:
        for b in batches:
            for mode in modes:
                try:
                    ms, setup = measure(m, b, mode, a.reps, torch)
                except Exception as e:  # report and go on: one model must not sink the table
                    print("%-14s %5d %-11s failed: %s" % (m, b, mode, str(e).splitlines()[0][:120]))
                    continue
                print("%-14s %5d %-11s %10.3f %9.1f" % (m, b, mode, ms, setup), flush=True)
                if out:
                    out.write(json.dumps({"model": m, "batch": b, "mode": mode, "ms": round(ms, 4),
                                          "setup_s": round(setup, 1), "device": dev,
                                          "torch": torch.__version__}) + "\n")
                    out.flush()
                torch._dynamo.reset()
    if out:
        out.close()


if __name__ == "__main__":
    main()
