#!/usr/bin/env python3
"""torch_profile.py: where PyTorch spends a zoo model's GPU time, kernel by kernel.

The counterpart of `tasc bench --profile` for the peer: the model as torch_peer.py builds it
(random init, strict FP32: TF32 off), compiled with torch.compile(mode="reduce-overhead") unless
--mode says otherwise, warmed up, then --reps runs under torch.profiler. Prints the GPU kernels by
total time per run (ms), their share, and the matmul/attention/other split, so a model where tasc
is behind can be explained kernel class by kernel class. Run on the GPU machine.

  python3 bench/peers/torch_profile.py --model bert --batch 8 --top 15
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402  (build: the same PyTorch model as the latency peer)


def kernel_class(name):
    n = name.lower()
    if any(k in n for k in ("gemm", "sgemm", "cutlass", "matmul", "xmma", "ampere_s", "sm90")):
        return "matmul"
    if any(k in n for k in ("attention", "fmha", "flash", "sdpa")):
        return "attention"
    if "softmax" in n:
        return "softmax"
    if "norm" in n:
        return "norm"
    if "conv" in n or "implicit" in n or "winograd" in n:
        return "conv"
    if "triton" in n:
        return "triton (fused elementwise)"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="zoo name: " + ",".join(torch_peer.ZOO))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--mode", default="cudagraphs", choices=torch_peer.MODES)
    ap.add_argument("--reps", type=int, default=20, help="profiled runs (%(default)s)")
    ap.add_argument("--top", type=int, default=15, help="kernels listed (%(default)s)")
    a = ap.parse_args()
    if a.model not in torch_peer.ZOO:
        sys.exit("torch_profile.py: unknown model '%s' (known: %s)" % (a.model, ",".join(torch_peer.ZOO)))
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, args = torch_peer.build(a.model, a.batch, torch)
    model = model.cuda().eval()
    args = tuple(x.cuda() for x in args)
    fn = model if a.mode == "eager" else torch.compile(
        model, mode="reduce-overhead" if a.mode == "cudagraphs" else "default")
    from torch.profiler import profile, ProfilerActivity
    with torch.inference_mode():
        for _ in range(10):
            fn(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(a.reps):
                fn(*args)
            torch.cuda.synchronize()
    per = {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None)
        if t is None:
            t = getattr(ev, "cuda_time_total", 0)
        if t <= 0 or ev.key.startswith(("cudaGraph", "cudaLaunch", "Memcpy", "Memset")):
            continue
        per[ev.key] = (t / 1000.0 / a.reps, ev.count / a.reps)
    total = sum(t for t, _ in per.values())
    print("# %s batch %d, torch %s, mode %s, %s: GPU kernel time %.3f ms per run" %
          (a.model, a.batch, torch.__version__, a.mode, torch.cuda.get_device_name(), total))
    classes = {}
    for k, (t, _) in per.items():
        c = kernel_class(k)
        classes[c] = classes.get(c, 0.0) + t
    for c, t in sorted(classes.items(), key=lambda kv: -kv[1]):
        print("class %-28s %8.3f ms %5.1f%%" % (c, t, 100.0 * t / max(total, 1e-9)))
    for k, (t, n) in sorted(per.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print("%8.3f ms %5.1f%% x%-5.1f %s" % (t, 100.0 * t / max(total, 1e-9), n, k[:110]))


if __name__ == "__main__":
    main()
