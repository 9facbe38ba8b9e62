#!/usr/bin/env python3
"""bench_run.py: the cost of calling tasc from Python -- tasc.run on a model against the CLI's
executor and against the C API called directly, on the CPU executor; wall-clock and CPU time.

    python3 bench/api/bench_run.py [--build BUILD] [--model models/squeezenet.json] [--reps N]
                                   [--threads T] [--settle S] [--out bench/api/results.md [--append]]

BUILD (default build) holds the `tasc` CLI, libtasc.so and the Python package (configured with
-DTASC_PYTHON=ON: BUILD/python/tasc). Run from the repository root, with numpy importable. Three
comparisons, each the median of N samples taken in turns so that drift hits all alike:

  first run in a fresh process (what one `tasc run` does; random weights generated once):
    CLI      `tasc run MODEL` wall time minus `tasc info MODEL` wall time (process start and model
             load cancel out: the rest is the executor and the printed summary)
    Python   a fresh interpreter: tasc.load, then the first tasc.run timed alone (--settle S:
             S seconds after the imports, to tell start-up effects of the interpreter apart)
  steady state (the same model run again in one process):
    C API    tasc_run through ctypes on BUILD/libtasc.so (the executor with nothing around it)
    Python   tasc.run(model, [x]) with a float32 C-contiguous input (used in place)

Each sample's CPU time (user + system: the child's rusage, or this process's) is kept beside its
wall time: on a shared machine other processes' load stretches wall times (OpenMP's barriers
most), while the CPU time of a one-thread run is the work itself. --threads T sets
OMP_NUM_THREADS for everything measured (default: OpenMP's choice). Prints a table and writes the
results file (--out; --append adds a section to it).
bench/api/run.sh runs it with one thread and with OpenMP's default.
"""
import argparse
import ctypes
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

FIRST_RUN = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, tasc
m = tasc.load(sys.argv[2])
x = [np.random.RandomState(0).standard_normal(t.shape).astype(np.float32) for t in m.inputs]
time.sleep(float(sys.argv[3]))
t0, c0 = time.perf_counter(), time.process_time()
tasc.run(m, x)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


class Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * 8)]


def timed(cmd):
    """Wall and CPU seconds (user + system, from the child's rusage) of one process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    w = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def timed_call(fn):
    """Wall and CPU seconds (this process) of fn()."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def c_api(build, model):
    """A function running the model once through libtasc.so's tasc_run (ctypes)."""
    lib = ctypes.CDLL(os.path.join(build, "libtasc.so"))
    lib.tasc_model_load.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.tasc_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Buffer), ctypes.c_int32, ctypes.POINTER(Buffer),
                             ctypes.c_int32, ctypes.c_void_p]
    lib.tasc_last_error.restype = ctypes.c_char_p
    m = ctypes.c_void_p()
    if lib.tasc_model_load(model.encode(), None, ctypes.byref(m)) != 0:
        sys.exit("tasc_model_load: %s" % lib.tasc_last_error().decode())
    return lib, m


def buffers(arrays):
    bufs = (Buffer * len(arrays))()
    for b, a in zip(bufs, arrays):
        b.data = a.ctypes.data
        b.rank = a.ndim
        for d, n in enumerate(a.shape):
            b.dims[d] = n
    return bufs


def summarise(s):
    """The table rows (what, wall median, wall min, CPU median, note) and the verdict line from the
    samples s[name] = [(wall, cpu), ...]."""
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in s.items()}
    low = {k: min(w for w, _ in v) for k, v in s.items()}
    cli = tuple(med["cli_run"][i] - med["cli_info"][i] for i in (0, 1))
    pct = lambda x, y: 100.0 * (x / y - 1.0) if y > 0 else float("nan")  # noqa: E731
    first = (pct(med["py_first"][0], cli[0]), pct(med["py_first"][1], cli[1]))
    steady = (pct(med["py_steady"][0], med["c_steady"][0]), pct(med["py_steady"][1], med["c_steady"][1]))
    note = lambda p, what: "%+.1f%% wall, %+.1f%% CPU vs %s" % (p[0], p[1], what)  # noqa: E731
    rows = [
        ("CLI `tasc run` (process)", med["cli_run"][0], low["cli_run"], med["cli_run"][1], ""),
        ("CLI `tasc info` (process: start + load)", med["cli_info"][0], low["cli_info"], med["cli_info"][1], ""),
        ("CLI executor (run - info)", cli[0], low["cli_run"] - low["cli_info"], cli[1], "first run"),
        ("Python tasc.run, first run in a fresh process", med["py_first"][0], low["py_first"], med["py_first"][1],
         note(first, "CLI executor")),
        ("C API tasc_run (ctypes), steady state", med["c_steady"][0], low["c_steady"], med["c_steady"][1], ""),
        ("Python tasc.run, steady state", med["py_steady"][0], low["py_steady"], med["py_steady"][1],
         note(steady, "C API")),
    ]
    worst = max(first + steady)
    verdict = "%s 5%%: first run %+.1f%% wall / %+.1f%% CPU, steady state %+.1f%% wall / %+.1f%% CPU" % (
        "within" if worst <= 5.0 else "NOT within", first[0], first[1], steady[0], steady[1])
    return rows, verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="models/squeezenet.json")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--settle", type=float, default=0.0)
    ap.add_argument("--out", default="bench/api/results.md")
    ap.add_argument("--append", action="store_true")
    a = ap.parse_args()
    if a.threads > 0:  # before libgomp starts: it reads the variable once
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import numpy as np
    import tasc

    cli = os.path.join(build, "tasc")
    model = tasc.load(a.model)
    xs = [np.random.RandomState(0).standard_normal(t.shape).astype(np.float32) for t in model.inputs]
    outs = [np.empty(t.shape, np.float32) for t in model.outputs]
    lib, cm = c_api(build, a.model)
    ins_c, outs_c = buffers(xs), buffers(outs)
    tasc.run(model, xs)  # warm: weights generated once per process, as in the CLI's one run
    lib.tasc_run(cm, ins_c, len(xs), outs_c, len(outs), None)

    def c_run():
        if lib.tasc_run(cm, ins_c, len(xs), outs_c, len(outs), None) != 0:
            sys.exit("tasc_run: %s" % lib.tasc_last_error().decode())

    s = {k: [] for k in ("cli_run", "cli_info", "py_first", "c_steady", "py_steady")}
    for _ in range(a.reps):
        s["cli_run"].append(timed([cli, "run", a.model]))
        s["cli_info"].append(timed([cli, "info", a.model]))
        r = subprocess.run([sys.executable, "-c", FIRST_RUN, os.path.join(build, "python"), a.model, str(a.settle)],
                           check=True, stdout=subprocess.PIPE)
        s["py_first"].append(tuple(float(v) for v in r.stdout.split()))
        for _ in range(3):  # steady-state samples are cheap: three pairs per round
            s["c_steady"].append(timed_call(c_run))
            s["py_steady"].append(timed_call(lambda: tasc.run(model, xs)))
    rows, verdict = summarise(s)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    head = "%s, %s, %d cores, %s; %d first-run%s and %d steady-state samples each" % (
        a.model, cpu, os.cpu_count() or 0, "OMP_NUM_THREADS=%d" % a.threads if a.threads else "OpenMP's default threads",
        a.reps, " (Python's %gs after its imports)" % a.settle if a.settle else "", 3 * a.reps)
    table = ["| what | wall median s | wall min s | CPU median s | |", "|---|---:|---:|---:|---|"] + [
        "| %s | %.4f | %.4f | %.4f | %s |" % r for r in rows]
    print(head)
    print("\n".join(table))
    print(verdict)
    with open(a.out, "a" if a.append else "w") as f:
        if not a.append:
            f.write("# tasc.run from Python vs the CLI's executor and the C API\n\n"
                    "Written by `bench/api/run.sh` (bench/api/bench_run.py; what each row is: its docstring).\n")
        f.write("\n## %s\n\n" % ("OMP_NUM_THREADS=%d" % a.threads if a.threads else "OpenMP's default threads"))
        f.write("`python3 bench/api/bench_run.py --build %s --reps %d%s` (%s): %s.\n\n" % (
            os.path.relpath(build), a.reps, " --threads %d" % a.threads if a.threads else "", time.strftime("%Y-%m-%d"),
            head))
        f.write("\n".join(table) + "\n\n")
        f.write("Overhead of the Python layer: %s.\n" % verdict)
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
