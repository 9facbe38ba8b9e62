#!/usr/bin/env python3
"""onnx_ort_check.py: conformance of tasc's ONNX import and export with onnxruntime.

    onnx_ort_check.py TASC import MODEL.onnx [options]
        onnxruntime runs MODEL.onnx; `tasc run MODEL.onnx` must give the same outputs.
    onnx_ort_check.py TASC export MODEL [options]
        `tasc export MODEL --out X.onnx`; X.onnx must pass onnx.checker (full check) and
        onnxruntime must give the outputs of `tasc run MODEL`.
    onnx_ort_check.py TASC sidecar MODEL.onnx [options]
        `tasc import MODEL.onnx --out M.json` (JSON + weights sidecar); `tasc run M.json` must give
        onnxruntime's outputs of MODEL.onnx.

options:
    --input NAME=FILE.npy   an input (others: seeded normal floats, integers in [0, --int-high))
    --ref NAME=FILE.npy     also compare output NAME with this reference
    --tol T                 relative L2 error allowed per output (default 1e-4)
    --int-high N            exclusive upper bound of generated integer inputs (default 10)
    --seed S                seed of generated inputs (default 0)
    --tasc-arg ARG          an extra argument for `tasc export` / `tasc import` (repeatable)
    --dim NAME=N            value of the symbolic input dimension NAME: generated inputs get it, and
                            every tasc command is given `--dim NAME=N` (repeatable)

Relative L2 error = ||a - b|| / ||b||. Prints one line per compared output; exit 0 when all pass,
1 on a mismatch or failure. onnx, onnxruntime and numpy are imported from this Python, or else
from the virtual environment $TASC_PY_VENV (default ~/.cache/tasc/onnx-venv), which is created with
pip from PyPI when needed; when that is impossible the script prints "SKIPPED: ..." and exits 77.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
DEPS = ("onnx", "onnxruntime", "numpy")


def have_deps():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def ensure_deps():
    """Make onnx, onnxruntime and numpy importable, re-executing under a venv if needed."""
    if have_deps():
        return
    if os.environ.get("TASC_ORT_CHECK_REEXEC"):
        print("SKIPPED: onnx/onnxruntime/numpy still missing in %s" % sys.executable)
        sys.exit(SKIP)
    venv = os.environ.get("TASC_PY_VENV") or os.path.join(os.path.expanduser("~"), ".cache", "tasc", "onnx-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        try:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=300)
        except Exception as e:  # noqa: BLE001
            print("SKIPPED: cannot create a virtual environment at %s (%s)" % (venv, e))
            sys.exit(SKIP)
    probe = subprocess.run([py, "-c", "import onnx, onnxruntime, numpy"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        if os.environ.get("TASC_NO_PIP"):
            print("SKIPPED: %s missing and TASC_NO_PIP is set" % ", ".join(DEPS))
            sys.exit(SKIP)
        try:
            r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                "--timeout", "30", *DEPS], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=900)
        except subprocess.TimeoutExpired:
            print("SKIPPED: pip install %s timed out (PyPI unreachable?)" % " ".join(DEPS))
            sys.exit(SKIP)
        if r.returncode != 0:
            last = r.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
            print("SKIPPED: pip install %s failed (PyPI unreachable?): %s" % (" ".join(DEPS), last[0]))
            sys.exit(SKIP)
    env = dict(os.environ, TASC_ORT_CHECK_REEXEC="1")
    os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:], env)


def parse(argv):
    if len(argv) < 3 or argv[1] not in ("import", "export", "sidecar"):
        sys.stderr.write(__doc__)
        sys.exit(2)
    opts = {"tasc": argv[0], "mode": argv[1], "model": argv[2], "inputs": {}, "refs": {}, "tol": 1e-4,
            "int_high": 10, "seed": 0, "tasc_args": [], "dims": {}}
    i = 3
    while i < len(argv):
        a = argv[i]
        v = argv[i + 1] if i + 1 < len(argv) else None
        if v is None:
            sys.exit("onnx_ort_check: %s needs a value" % a)
        if a in ("--input", "--ref"):
            name, _, path = v.partition("=")
            opts["inputs" if a == "--input" else "refs"][name] = path
        elif a == "--tol":
            opts["tol"] = float(v)
        elif a == "--int-high":
            opts["int_high"] = int(v)
        elif a == "--seed":
            opts["seed"] = int(v)
        elif a == "--tasc-arg":
            opts["tasc_args"].append(v)
        elif a == "--dim":
            name, _, n = v.partition("=")
            opts["dims"][name] = int(n)
        else:
            sys.exit("onnx_ort_check: unknown option %s" % a)
        i += 2
    return opts


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        print("FAIL: %s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace").strip()))
        sys.exit(1)
    return r.stdout.decode()


def main():
    ensure_deps()
    import numpy as np
    import onnx
    import onnxruntime as ort

    o = parse(sys.argv[1:])
    dim_args = [x for name, n in sorted(o["dims"].items()) for x in ("--dim", "%s=%d" % (name, n))]
    o["tasc_args"] = o["tasc_args"] + dim_args
    tmp = tempfile.mkdtemp(prefix="tasc-ort-")
    try:
        check(o, tmp, np, onnx, ort)
    finally:  # sys.exit inside check() ends up here too
        shutil.rmtree(tmp, ignore_errors=True)


def check(o, tmp, np, onnx, ort):
    """Run onnxruntime and tasc as o says, in the scratch folder tmp; exits 0 or 1."""
    tasc, model = o["tasc"], o["model"]
    dim_args = [x for name, n in sorted(o["dims"].items()) for x in ("--dim", "%s=%d" % (name, n))]
    ort_model = model
    tasc_model = model
    if o["mode"] == "export":
        ort_model = os.path.join(tmp, "exported.onnx")
        run([tasc, "export", model, "--out", ort_model] + o["tasc_args"])
        onnx.checker.check_model(onnx.load(ort_model), full_check=True)
        print("onnx.checker: %s passes (full check)" % os.path.basename(model))
    elif o["mode"] == "sidecar":
        tasc_model = os.path.join(tmp, "imported.json")
        out = run([tasc, "import", model, "--out", tasc_model] + o["tasc_args"])
        print(out.strip())

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(ort_model, opts, providers=["CPUExecutionProvider"])
    rng = np.random.RandomState(o["seed"])
    feeds, args = {}, []
    for k, inp in enumerate(sess.get_inputs()):
        if inp.name in o["inputs"]:
            arr = np.load(o["inputs"][inp.name])
        else:
            shape = [o["dims"][d] if isinstance(d, str) and d in o["dims"] else d for d in inp.shape]
            if not all(isinstance(d, int) for d in shape):
                print("FAIL: input %s has the shape %s: give its symbolic dimensions with --dim" % (inp.name, inp.shape))
                sys.exit(1)
            if "int" in inp.type:
                arr = rng.randint(0, o["int_high"], size=shape).astype(np.int64)
            else:
                arr = rng.standard_normal(size=shape).astype(np.float32)
        if "int64" in inp.type:
            arr = arr.astype(np.int64)
        elif "int32" in inp.type:
            arr = arr.astype(np.int32)
        else:
            arr = arr.astype(np.float32)
        feeds[inp.name] = arr
        path = os.path.join(tmp, "in%d.npy" % k)
        np.save(path, arr)
        args += ["--input", "%s=%s" % (inp.name, path)]
    ort_out = sess.run(None, feeds)
    names = [x.name for x in sess.get_outputs()]

    out_dir = os.path.join(tmp, "out")
    # a sidecar JSON model or an exported one has its dims fixed already
    run_dims = dim_args if tasc_model.endswith(".onnx") else []
    text = run([tasc, "run", tasc_model, "--out-dir", out_dir] + args + run_dims)
    files = [line[len("wrote "):].strip() for line in text.splitlines() if line.startswith("wrote ")]
    if len(files) != len(names):
        print("FAIL: tasc wrote %d outputs, onnxruntime gives %d" % (len(files), len(names)))
        sys.exit(1)
    bad = 0
    for name, ref, path in zip(names, ort_out, files):
        got = np.load(path).astype(np.float64)
        want = np.asarray(ref).astype(np.float64)
        if got.shape != want.shape:
            print("FAIL %s: tasc shape %s, onnxruntime %s" % (name, got.shape, want.shape))
            bad += 1
            continue
        pairs = [("onnxruntime", want)]
        if name in o["refs"]:
            pairs.append(("reference", np.load(o["refs"][name]).astype(np.float64)))
        for what, w in pairs:
            den = max(np.linalg.norm(w), 1e-30)
            rel = np.linalg.norm(got - w) / den
            mx = float(np.abs(got - w).max()) if got.size else 0.0
            ok = rel <= o["tol"] and np.isfinite(got).all()
            bad += not ok
            print("%s %s vs %s: shape %s rel_l2 %.3e max_abs %.3e" % ("ok  " if ok else "FAIL", name, what,
                                                                      tuple(got.shape), rel, mx))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
