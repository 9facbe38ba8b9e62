#!/usr/bin/env python3
"""table.py TASC.tsv TORCH.jsonl ENV.txt: the zoo table of bench/zoo/run_device.sh (markdown on stdout).

One row per model and batch: tasc original and optimized per precision, PyTorch eager and
torch.compile with CUDA graphs where measured, and tasc optimized (fp32) against PyTorch's best."""
import csv
import json
import sys


def fmt(ms):
    try:
        return "%.3f" % float(ms)
    except ValueError:  # "?": the bench did not report it
        return ms


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: table.py TASC.tsv TORCH.jsonl ENV.txt")
    tasc = {}
    precs = []
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            tasc[(r["model"], int(r["batch"]), r["precision"])] = r
            if r["precision"] not in precs:
                precs.append(r["precision"])
    torch = {}
    try:
        for line in open(sys.argv[2]):
            if line.strip():
                j = json.loads(line)
                torch[(j["model"], j["batch"], j["mode"])] = j["ms"]
    except FileNotFoundError:
        pass
    env = open(sys.argv[3]).read().splitlines()
    print("Device: %s\n" % (env[1] if len(env) > 1 else "?"))
    head = ["model", "batch"]
    for p in precs:
        head += ["tasc original %s ms" % p, "tasc optimized %s ms" % p]
    head += ["torch eager ms", "torch CUDA graphs ms", "tasc fp32 vs torch best"]
    print("| " + " | ".join(head) + " |")
    print("|---|---:|" + "---:|" * (len(head) - 2))
    keys = sorted({(m, b) for (m, b, _) in tasc}, key=lambda k: (k[1], k[0]))
    for m, b in keys:
        row = [m, str(b)]
        for p in precs:
            r = tasc.get((m, b, p))
            row += [fmt(r["original_ms"]), fmt(r["optimized_ms"])] if r else ["-", "-"]
        eager = torch.get((m, b, "eager"))
        graphs = torch.get((m, b, "cudagraphs"))
        row += ["%.3f" % eager if eager else "-", "%.3f" % graphs if graphs else "-"]
        best = min([x for x in (eager, graphs, torch.get((m, b, "compile"))) if x] or [0])
        r = tasc.get((m, b, "fp32"))
        try:
            row.append("%.2fx" % (best / float(r["optimized_ms"])) if best and r else "-")
        except ValueError:
            row.append("-")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
