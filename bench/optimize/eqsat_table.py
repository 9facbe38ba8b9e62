#!/usr/bin/env python3
"""eqsat_table.py OUTDIR: the markdown table of bench/optimize/eqsat.md from the runs of
bench/optimize/eqsat_run.sh (OUTDIR/NAME.BUILTINS.SEARCH.{out,err,time,load})."""
import os
import re
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def run(base):
    out, err = read(base + ".out"), read(base + ".err")
    r = {}
    m = re.search(r"^cost: ([0-9.]+) us -> ([0-9.]+) us \(predicted speedup ([0-9.]+)x\)", out, re.M)
    if m:
        r["before"], r["after"], r["speedup"] = float(m.group(1)), float(m.group(2)), m.group(3)
    m = re.search(r"\(search ([0-9.]+) s\)", out)
    r["search"] = m.group(1) if m else "?"
    m = re.search(r"^eqsat: search [0-9.]+ s \(([0-9.]+) s cpu\)", err, re.M)
    r["cpu"] = m.group(1) if m else ""
    m = re.search(r"^search: eqsat: (\d+) rounds( \(saturated\))?, (\d+) e-nodes.*extraction: ([^;\n]+)", out, re.M)
    if m:
        r["egraph"] = "%s%s, %s" % (m.group(1), " sat" if m.group(2) else "", m.group(3))
        r["extraction"] = m.group(4)
    r["limited"] = "time-limit" in out
    r["check"] = "passed" if "check: passed" in out else ("skipped" if "check: skipped" in out else "FAILED")
    t = read(base + ".time").split()
    r["proc_cpu"] = "%.1f" % (float(t[0]) + float(t[1])) if len(t) >= 2 else "?"
    m = re.search(r"load average: ([0-9.]+)", read(base + ".load"))
    r["load"] = m.group(1) if m else "?"
    return r


def main():
    d = sys.argv[1]
    names = sorted({f.split(".all.")[0] for f in os.listdir(d) if ".all." in f},
                   key=lambda n: (n.endswith(".onnx"), n))
    print("| model | built-ins | backtrack | eqsat | eqsat cost vs backtrack | search s backtrack (wall) "
          "| search s eqsat (wall / cpu) | rounds, e-nodes | extraction | eqsat check | load |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|---:|")
    for n in names:
        for b in ("all", "minimal"):
            bt, eq = run(os.path.join(d, "%s.%s.backtrack" % (n, b))), run(os.path.join(d, "%s.%s.eqsat" % (n, b)))
            if "after" not in bt or "after" not in eq:
                print("| %s | %s | %s | %s | (a run failed) | | | | | | |" % (n, b, bt.get("speedup", "?"), eq.get("speedup", "?")))
                continue
            rel = (eq["after"] / bt["after"] - 1.0) * 100.0
            print("| %s | %s | %sx | %sx | %+.1f%% | %s%s | %s / %s | %s | %s | %s | %s |" % (
                n.replace(".json", ""), b, bt["speedup"], eq["speedup"], rel, bt["search"],
                " (limit)" if bt["limited"] else "", eq["search"], eq["cpu"], eq.get("egraph", "?"),
                eq.get("extraction", "?"), eq["check"], eq["load"]))


if __name__ == "__main__":
    main()
