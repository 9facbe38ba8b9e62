#!/usr/bin/env python3
"""run_cpu.py: the model corpus through tasc on the CPU, against onnxruntime.

    python3 bench/models/run_cpu.py TASC [--dir bench/models/out] [--models a,b,...]
        [--time-limit S] [--seeds N] [--timeout S] [--table-only]

Per model exported by export.py (DIR/NAME.onnx with its DIR/NAME.in.*.npy inputs and onnxruntime's
DIR/NAME.out.*.npy outputs):
  1. import: `tasc info NAME.onnx` -- the node count, or the exact one-line error when refused;
  2. agreement before optimize: tests/onnx_ort_check.py TASC import NAME.onnx (onnxruntime on the
     model against `tasc run`, and `tasc run` against the saved reference output);
  3. `tasc optimize NAME.onnx --seeds N --time-limit S` (shipped rules, analytic cost model, the
     optimizer's own CPU check): nodes before and after, the predicted speedup;
  (--random-check: `tasc run NAME.graph.onnx --random-weights`, values by role (twice: same bytes?)
     and --weights-init legacy: the output std of each, the inputs the GPU machine runs on; and the
     graph with those values imported to JSON and checked against onnxruntime in export mode);
  4. agreement after optimize: tests/onnx_ort_check.py TASC export NAME.opt.json --ref ... (the
     optimized graph exported to ONNX and run by onnxruntime against `tasc run` of it, and `tasc
     run` of it against the original model's reference output: the figure reported).
Every step's result is appended to DIR/cpu-results.jsonl (the latest line per model counts), then
the table bench/models/results-cpu.md is written from it and printed. Run with the corpus venv's
python (onnx, onnxruntime, numpy): ~/.cache/tasc/corpus-venv/bin/python.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

ORT_CHECK = os.path.join(ROOT, "tests", "onnx_ort_check.py")


def sh(cmd, timeout):
    """(exit code, stdout, stderr, seconds); exit code None on timeout."""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"), time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout, time.time() - t0


def last_line(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def io_args(d, name):
    """--input and --ref arguments of onnx_ort_check.py from the exported .npy files."""
    args = []
    for p in sorted(glob.glob(os.path.join(d, "%s.in.*.npy" % name))):
        args += ["--input", "%s=%s" % (os.path.basename(p)[len(name) + 4:-4], p)]
    for p in sorted(glob.glob(os.path.join(d, "%s.out.*.npy" % name))):
        args += ["--ref", "%s=%s" % (os.path.basename(p)[len(name) + 5:-4], p)]
    return args


def ort_check(tasc, mode, model, args, timeout):
    """Worst rel L2 against onnxruntime and against the reference, the check's exit code, and the
    failure line if any."""
    rc, out, err, secs = sh([sys.executable, ORT_CHECK, tasc, mode, model] + args, timeout)
    res = {"rc": rc, "seconds": round(secs, 1)}
    for what in ("onnxruntime", "reference"):
        vals = [float(m.group(1)) for m in re.finditer(r" vs %s: shape .* rel_l2 (\S+)" % what, out)]
        if vals:
            res[what] = max(vals)
    if rc != 0:
        fails = [x for x in out.splitlines() if x.startswith("FAIL") or x.startswith("SKIPPED")]
        res["error"] = (fails[0] if fails else last_line(err) or last_line(out))[:600]
    return res


def optimize(tasc, model, out, a):
    cmd = [tasc, "optimize", model, "--out", out, "--seeds", str(a.seeds), "--time-limit", str(a.time_limit),
           "--quiet"]
    rc, so, se, secs = sh(cmd, a.timeout)
    res = {"rc": rc, "seconds": round(secs, 1)}
    m = re.search(r"^nodes: (\d+) -> (\d+)", so, re.M)
    if m:
        res["nodes_before"], res["nodes_after"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"cost: (\S+) us -> (\S+) us \(predicted speedup (\S+)x\)", so)
    if m:
        res["cost_before_us"], res["cost_after_us"] = float(m.group(1)), float(m.group(2))
        res["speedup"] = float(m.group(3))
    m = re.search(r"rel L2 (\S+)", so)
    if m:
        res["check_rel_l2"] = float(m.group(1))
    if "time limit" in so:
        res["time_limited"] = True
    if rc != 0:
        res["error"] = (last_line(se) or last_line(so))[:600]
    return res


def random_check(tasc, d, name, a):
    """`tasc run NAME.graph.onnx --random-weights` (the GPU machine's input) with the values by role
    and the legacy ones: the output std of each, and whether two runs give the same bytes."""
    g = os.path.join(d, name + ".graph.onnx")
    res = {}
    for kind in ("scaled", "legacy"):
        sums = []
        for _ in range(2 if kind == "scaled" else 1):
            rc, out, err, _ = sh([tasc, "run", g, "--random-weights", "--weights-init", kind], a.timeout)
            m = re.search(r"^output .* std (\S+) .* checksum (\S+)", out, re.M)
            if rc != 0 or not m:
                res[kind + "_error"] = last_line(err)[:300]
                break
            res[kind + "_std"] = float(m.group(1))
            sums.append(m.group(2))
        if kind == "scaled" and len(sums) == 2:
            res["deterministic"] = sums[0] == sums[1]
    # the same weights through onnxruntime: imported to JSON, exported, run by both
    js = os.path.join(d, name + ".random.json")
    rc, out, err, _ = sh([tasc, "import", g, "--random-weights", "--out", js], a.timeout)
    if rc == 0:
        chk = ort_check(tasc, "export", js, [], a.timeout)
        if "onnxruntime" in chk:
            res["vs_ort"] = chk["onnxruntime"]
        if chk.get("error"):
            res["vs_ort_error"] = chk["error"]
    else:
        res["vs_ort_error"] = last_line(err)[:300]
    return res


def run_model(tasc, d, name, a):
    model = os.path.join(d, name + ".onnx")
    rec = {"model": name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if not os.path.exists(model):
        rec["import_error"] = "not exported (%s missing)" % model
        return rec
    rc, out, err, secs = sh([tasc, "info", model], a.timeout)
    if rc != 0:
        rec["import_error"] = last_line(err) if rc is not None else err
        return rec
    m = re.search(r"^nodes: (\d+)", out, re.M)
    rec["nodes"] = int(m.group(1)) if m else None
    rec["import_seconds"] = round(secs, 1)
    args = io_args(d, name)
    rec["before"] = ort_check(tasc, "import", model, args, a.timeout)
    if a.random_check:
        rec["random"] = random_check(tasc, d, name, a)
    opt = os.path.join(d, name + ".opt.json")
    rec["optimize"] = optimize(tasc, model, opt, a)
    if rec["optimize"]["rc"] == 0:
        refs = [x for i, x in enumerate(args) if i % 2 == 1 and args[i - 1] == "--ref"]
        inputs = [x for i, x in enumerate(args) if i % 2 == 1 and args[i - 1] == "--input"]
        after_args = []
        for x in inputs:
            after_args += ["--input", x]
        for x in refs:
            after_args += ["--ref", x]
        rec["after"] = ort_check(tasc, "export", opt, after_args, a.timeout)
    return rec


def fmt_err(x):
    return "%.1e" % x if isinstance(x, float) else "-"


def table(d, path):
    recs = {}
    rp = os.path.join(d, "cpu-results.jsonl")
    if os.path.exists(rp):
        for line in open(rp):
            if line.strip():  # later lines override earlier ones, key by key
                r = json.loads(line)
                if "import_error" not in r:
                    recs.get(r["model"], {}).pop("import_error", None)
                recs.setdefault(r["model"], {}).update(r)
    man = {}
    mp = os.path.join(d, "manifest.jsonl")
    if os.path.exists(mp):
        for line in open(mp):
            if line.strip():  # key by key, as above; a new export's record starts afresh
                r = json.loads(line)
                if "nodes" in r or "error" in r:
                    man[r["model"]] = r
                else:
                    man.setdefault(r["model"], {}).update(r)
    rows = ["| model | imports | nodes (ONNX) | nodes | after optimize | rel L2 vs ORT before | after | "
            "predicted speedup | input sensitivity | --random-weights std (legacy) | note |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    errors = []
    for name in corpus.MODELS:
        r = recs.get(name)
        mf = man.get(name, {})
        onnx_nodes = str(mf.get("nodes", "-"))
        if not r:
            note = "export failed: " + mf["error"].splitlines()[0][:120] if "error" in mf else "not run"
            rows.append("| %s | - | %s | | | | | | | | %s |" % (name, onnx_nodes, note))
            continue
        sens = "%.2g" % mf["input_sensitivity"] if "input_sensitivity" in mf else "-"
        if mf.get("exporter") == "dynamo":
            notes_exp = "dynamo exporter (TorchScript: %s)" % mf.get("torchscript_error", "?")[:100]
        else:
            notes_exp = ""
        if "import_error" in r:
            rows.append("| %s | no | %s | | | | | | %s | | refused (below)%s |" % (
                name, onnx_nodes, sens, "; " + notes_exp if notes_exp else ""))
            errors.append((name, r["import_error"]))
            continue
        b, o, af = r.get("before", {}), r.get("optimize", {}), r.get("after", {})
        notes = [notes_exp] if notes_exp else []
        if mf.get("input_sensitivity", 1.0) < 1e-6:
            notes.append("the output does not depend on the input under PyTorch's init: the agreement is vacuous")
        rnd = r.get("random", {})
        rstd = "-"
        if "scaled_std" in rnd:
            rstd = "%.3g (%.3g)" % (rnd["scaled_std"], rnd.get("legacy_std", float("nan")))
            if rnd.get("deterministic") is False:
                notes.append("--random-weights runs differ")
        if "vs_ort" in rnd:
            notes.append("with --random-weights: rel L2 %.1e against onnxruntime" % rnd["vs_ort"])
        for what, x in (("before", b), ("optimize", o), ("after", af)):
            if x.get("error"):
                notes.append("%s: %s" % (what, x["error"][:200].replace("|", "/")))
        if o.get("time_limited"):
            notes.append("search ended by its time limit")
        rel_b = b.get("reference", b.get("onnxruntime"))
        rel_a = af.get("reference", af.get("onnxruntime"))
        sp = "%.3fx" % o["speedup"] if "speedup" in o else "-"
        rows.append("| %s | yes | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, onnx_nodes, r.get("nodes", "-"), o.get("nodes_after", "-"), fmt_err(rel_b), fmt_err(rel_a), sp,
            sens, rstd, "; ".join(notes)))
    text = "\n".join(rows) + "\n"
    if errors:
        text += "\nImport errors (exact):\n\n"
        for name, e in errors:
            text += "- %s: `%s`\n" % (name, e.replace(ROOT + "/", ""))
    vers = sorted({"torch %s, onnxruntime %s" % (m["torch"], m["onnxruntime"]) for m in man.values() if "torch" in m})
    dates = sorted(r["date"] for r in recs.values() if "date" in r)
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL).stdout.decode().strip()
    except OSError:
        commit = ""
    with open(path, "w") as f:
        f.write("# The model corpus on the CPU: tasc against onnxruntime\n\n")
        f.write("Exported with %s; tasc at %s%s; run %s.\n\n" % (
            "; ".join(vers) or "?", commit or "?", " (with the working tree's changes)" if commit else "",
            "from %s to %s" % (dates[0], dates[-1]) if dates else "?"))
        f.write("Made by `bench/models/run_cpu.py` (see bench/models/README.md) from the files of "
                "`bench/models/export.py`; rel L2 is tasc's output against onnxruntime's reference output of "
                "the original model (the largest over outputs), before and after `tasc optimize`; the "
                "predicted speedup is the analytic cost model's. Input sensitivity: rel L2 between "
                "onnxruntime's outputs on two different inputs (near 0: the output is the last biases "
                "alone under PyTorch's init, and the agreement says little about the layers). "
                "--random-weights std: the output std of `tasc run NAME.graph.onnx --random-weights` "
                "(values by role; in brackets `--weights-init legacy`).\n\n")
        f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tasc", help="the tasc binary (a CPU build is enough)")
    ap.add_argument("--dir", default=os.path.join(HERE, "out"), help="export.py's output folder (%(default)s)")
    ap.add_argument("--models", default=",".join(corpus.MODELS), help="comma-separated names (default: all)")
    ap.add_argument("--time-limit", type=float, default=8, help="tasc optimize --time-limit (%(default)s)")
    ap.add_argument("--seeds", type=int, default=1, help="tasc optimize --seeds (%(default)s)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per step (%(default)s)")
    ap.add_argument("--results", default=os.path.join(HERE, "results-cpu.md"), help="the table (%(default)s)")
    ap.add_argument("--table-only", action="store_true", help="only rewrite the table from cpu-results.jsonl")
    ap.add_argument("--random-check", action="store_true",
                    help="also run NAME.graph.onnx with --random-weights (scaled twice, legacy once): output std")
    ap.add_argument("--random-only", action="store_true", help="only that (merged into the table with the rest)")
    a = ap.parse_args()
    tasc = os.path.abspath(a.tasc)
    if not a.table_only:
        for name in [n for n in a.models.split(",") if n]:
            if name not in corpus.MODELS:
                sys.exit("run_cpu.py: unknown model '%s'" % name)
            t0 = time.time()
            if a.random_only:
                rec = {"model": name, "random": random_check(tasc, a.dir, name, a)}
            else:
                rec = run_model(tasc, a.dir, name, a)
            rec["seconds"] = round(time.time() - t0, 1)
            with open(os.path.join(a.dir, "cpu-results.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
            print("%s: %s" % (name, json.dumps(rec)), flush=True)
    print(table(a.dir, a.results))


if __name__ == "__main__":
    main()
