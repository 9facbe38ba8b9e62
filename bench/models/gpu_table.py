#!/usr/bin/env python3
"""gpu_table.py OUT: the table of bench/models/run_gpu.sh from the files it wrote under OUT
(optimize/NAME.txt, bench/NAME.json, torch.jsonl, env.txt), as Markdown on stdout.

Columns per model: nodes before and after `tasc optimize`, its predicted speedup, tasc's measured
latency of the original and the optimized graph and their speedup, the worst relative L2 error of
the GPU results against the CPU executor, PyTorch eager, torch.compile and torch.compile with CUDA
graphs (reduce-overhead), and PyTorch's best mode over tasc optimized (> 1: tasc is faster).
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402


def ms(x):
    return "%.3f" % x if isinstance(x, (int, float)) else "-"


def tasc_row(out, name):
    r = {}
    p = os.path.join(out, "optimize", name + ".txt")
    if os.path.exists(p):
        t = open(p).read()
        m = re.search(r"^nodes: (\d+) -> (\d+)", t, re.M)
        if m:
            r["nodes"] = (int(m.group(1)), int(m.group(2)))
        m = re.search(r"predicted speedup (\S+)x", t)
        if m:
            r["predicted"] = float(m.group(1))
        elif t.strip():
            r["error"] = t.strip().splitlines()[-1][:200]
    p = os.path.join(out, "bench", name + ".json")
    if r and not os.path.exists(p):
        r["error"] = "tasc bench wrote no results (see tasc.log)"
    if os.path.exists(p):
        try:
            b = json.load(open(p))
        except ValueError as e:
            r["error"] = "bench JSON unreadable: %s" % e
            return r
        for g in b.get("graphs", []):
            r[g.get("role")] = g.get("median_ms")
        if len(b.get("graphs", [])) > 1:
            r["speedup"] = b.get("speedup")
        errs = []
        for o in b.get("outputs", []):
            errs += [v for k, v in o.items() if k.endswith("_vs_cpu") and isinstance(v, (int, float))]
        if errs:
            r["vs_cpu"] = max(errs)
    return r


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_table.py OUT")
    out = sys.argv[1]
    torch = {}
    p = os.path.join(out, "torch.jsonl")
    if os.path.exists(p):
        for line in open(p):
            if line.strip():
                j = json.loads(line)
                torch[(j["model"], j["mode"])] = j.get("ms")
    env = open(os.path.join(out, "env.txt")).read().strip().splitlines() if os.path.exists(
        os.path.join(out, "env.txt")) else []
    print("# The model corpus on the GPU: tasc against PyTorch\n")
    print("Made by `bench/models/run_gpu.sh` in one call on one GPU (%s). Latencies in ms, batch 1, FP32 "
          "(TF32 off); tasc: median of 200 CUDA-graph replays, `--random-weights` (values by role); PyTorch: "
          "median of 100, random init. Last column: PyTorch's best mode over tasc optimized.\n" %
          ("; ".join(x for x in env[1:2]) or "see env.txt"))
    print("| model | nodes | after optimize | predicted | tasc original | tasc optimized | measured speedup "
          "| GPU vs CPU rel L2 | eager | compile | reduce-overhead | best PyTorch / tasc |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for name in corpus.MODELS:
        r = tasc_row(out, name)
        tm = [torch.get((name, m)) for m in ("eager", "compile", "cudagraphs")]
        if not r and not any(tm):
            continue
        best = min([x for x in tm if isinstance(x, (int, float))], default=None)
        opt = r.get("optimized", r.get("original"))
        ratio = "%.2fx" % (best / opt) if best and opt else "-"
        nodes = r.get("nodes", ("-", "-"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, nodes[0], nodes[1], "%.3fx" % r["predicted"] if "predicted" in r else "-", ms(r.get("original")),
            ms(r.get("optimized")), "%.3fx" % r["speedup"] if r.get("speedup") else "-",
            "%.1e" % r["vs_cpu"] if "vs_cpu" in r else "-", ms(tm[0]), ms(tm[1]), ms(tm[2]), ratio))
        if "error" in r:
            notes.append("- %s: %s" % (name, r["error"]))
    if notes:
        print("\nNotes:\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
