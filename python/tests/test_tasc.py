"""Tests of the Python package `tasc` (python/tasc, the extension python/_tasc.c).

Run from the repository root with the package importable (ctest's python_api test sets
PYTHONPATH to the build folder's python/; or after `pip install ./python`):

    python -m pytest python/tests

They load the shared ONNX models (../shared/models/onnx, or $TASC_SHARED_MODELS; the tests that
need them are skipped when the folder is missing), run them against the onnxruntime reference
outputs stored there, optimize, export and save them, and check that every error path raises the
tasc.Error subclass of its status with the C library's message. $TASC_CLI (a `tasc` binary), when
set, lets Model.info() be compared with `tasc info --json`.
"""
import json
import os
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import tasc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.environ.get("TASC_SHARED_MODELS") or os.path.join(ROOT, "..", "shared", "models", "onnx")
RULES3 = os.path.join(ROOT, "rules", "verified-3.json")
TOL = 1e-4

# name: (input, output, rules used to optimize it)
CASES = {
    "squeezenet1_1": ("input", "117", RULES3),
    "bert_mini": ("input_ids", "layer_norm_4", None),
}

TINY = json.dumps({
    "format": "tasc-model", "version": 1, "name": "tiny",
    "inputs": [{"name": "x", "shape": [2, 3]}],
    "weights": [{"name": "w", "shape": [3, 4], "init": {"kind": "random", "seed": 7, "mean": 0.0, "std": 0.5}},
                {"name": "b", "shape": [4], "init": {"kind": "constant", "value": 0.25}}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": ["x", "w"]},
              {"name": "add", "op": "ewadd", "inputs": ["mm", "b"]},
              {"name": "y", "op": "relu", "inputs": ["add"]}],
    "outputs": ["y"],
})


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def need_models():
    if not os.path.exists(os.path.join(MODELS, "squeezenet1_1.onnx")):
        pytest.skip("the shared ONNX models (%s) are missing" % MODELS)


class Case:
    def __init__(self, name):
        need_models()
        inp, out, rules = CASES[name]
        self.name, self.input_name, self.output_name, self.rules = name, inp, out, rules
        self.path = os.path.join(MODELS, name + ".onnx")
        self.x = np.load(os.path.join(MODELS, "%s.in.%s.npy" % (name, inp)))
        self.ref = np.load(os.path.join(MODELS, "%s.out.%s.npy" % (name, out)))
        self.model = tasc.load(self.path)


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return Case(request.param)


@pytest.fixture(scope="module")
def squeezenet():
    return Case("squeezenet1_1")


@pytest.fixture(scope="module")
def optimized(case):
    return tasc.optimize(case.model, rules=case.rules, check_seeds=1)


@pytest.fixture()
def tiny():
    return tasc.from_json(TINY, "tiny.json")


# --- load, info ------------------------------------------------------------------------------------

def test_version():
    assert tasc.__version__.count(".") == 2
    assert isinstance(tasc.has_cuda(), bool)


def test_load_describes_the_model(case):
    m = case.model
    assert [t.name for t in m.inputs] == [case.input_name]
    assert m.inputs[0].shape == case.x.shape
    assert m.outputs[0].shape == case.ref.shape
    info = m.info()
    assert info["nodes"] > 10 and info["flops"] > 0 and info["params"] > 0
    assert sum(info["op_counts"].values()) == info["nodes"]
    assert "tasc.Model" in repr(m) and case.input_name in repr(m)
    assert "digraph" in m.to_dot()


@pytest.mark.skipif(not os.environ.get("TASC_CLI"), reason="TASC_CLI not set")
def test_info_and_dot_match_the_cli(squeezenet):
    out = subprocess.run([os.environ["TASC_CLI"], "info", "--json", squeezenet.path], check=True,
                         stdout=subprocess.PIPE).stdout
    cli = json.loads(out)
    mine = squeezenet.model.info()
    for key, value in cli.items():
        if key != "file":
            assert mine[key] == value, key
    dot = subprocess.run([os.environ["TASC_CLI"], "dot", squeezenet.path], check=True, stdout=subprocess.PIPE).stdout
    assert squeezenet.model.to_dot() == dot.decode()


def test_json_round_trip(tiny):
    text = tiny.to_json()
    again = tasc.from_json(text)
    assert again.to_json() == text
    assert tiny.info()["op_counts"] == {"matmul": 1, "ewadd": 1, "relu": 1}


# --- run -------------------------------------------------------------------------------------------

def test_run_matches_onnxruntime(case):
    (y,) = tasc.run(case.model, [case.x])
    assert y.dtype == np.float32 and y.shape == case.ref.shape
    assert rel_l2(y, case.ref) <= TOL
    by_name = tasc.run(case.model, {case.input_name: case.x})
    assert list(by_name) == [case.output_name]
    assert np.array_equal(by_name[case.output_name], y)


def test_inputs_are_used_in_place():
    x = np.ones((2, 3), np.float32)
    assert tasc._as_input(x) is x  # float32, C-contiguous: no copy
    assert tasc._as_input(x.T).flags["C_CONTIGUOUS"]
    assert tasc._as_input(np.arange(6, dtype=np.int64)).dtype == np.float32


def test_generated_inputs_are_seeded(tiny):
    a, b = tasc.run(tiny)[0], tasc.run(tiny, seed=0)[0]
    c = tasc.run(tiny, seed=1)[0]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(tasc.run(tiny, [None])[0], a)


def test_run_from_threads(tiny):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    want = tasc.run(tiny, [x])[0]
    got = [None] * 4

    def work(i):
        got[i] = tasc.run(tiny, [x])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(g, want) for g in got)


# --- optimize, export, save -------------------------------------------------------------------------

def test_optimize(case, optimized):
    best, st = optimized
    assert isinstance(best, tasc.Model) and isinstance(st, tasc.OptimizeStats)
    assert st.nodes_after < st.nodes_before and st.cost_after_us < st.cost_before_us and st.speedup > 1
    assert st.rewrites_applied == sum(r.times for r in st.rewrites) > 0
    assert 0 <= st.check_error <= TOL and st.search_s >= 0
    assert best.info()["nodes"] == st.nodes_after
    (y,) = tasc.run(best, [case.x])
    assert rel_l2(y, case.ref) <= TOL


def test_export_onnx_and_save(case, optimized, tmp_path):
    best = optimized.model
    onnx_path, json_path = tmp_path / "opt.onnx", tmp_path / "opt.json"
    best.export_onnx(onnx_path)
    best.save(str(json_path))
    assert (tmp_path / "opt.weights.bin").exists()
    for path in (onnx_path, json_path):
        (y,) = tasc.run(tasc.load(path), [case.x])
        assert rel_l2(y, case.ref) <= TOL, path


def test_builtins_minimal(squeezenet):
    best, st = tasc.optimize(squeezenet.model, rules=RULES3, builtins="minimal", check_seeds=1)
    assert st.nodes_after < st.nodes_before
    assert not any(r.name.startswith("merge-") for r in st.rewrites)  # no built-in search move
    (y,) = tasc.run(best, [squeezenet.x])
    assert rel_l2(y, squeezenet.ref) <= TOL


def test_optimize_options(tiny):
    best, st = tasc.optimize(tiny, rules="none", alpha=1.0, budget=0, time_limit=0, check=False,
                             cost_set=["launch_us=2"])
    assert st.check_error == -1 and st.nodes_after == 1  # bias and relu fused into the matmul
    x = np.ones((2, 3), np.float32)
    assert rel_l2(tasc.run(best, [x])[0], tasc.run(tiny, [x])[0]) <= 1e-6


def test_rules_generate_verify_save(tmp_path):
    cands, st = tasc.generate_rules(2, ops=["ewadd", "ewmul", "relu"], threads=1)
    assert len(cands) == st["rules"] > 0
    proved, quarantined, vs = tasc.verify_rules(cands, threads=1, axioms=os.path.join(ROOT, "verifier", "axioms.smt2"))
    assert vs["candidates"] == len(cands) and vs["proved"] == len(proved) > 0
    assert len(proved) + len(quarantined) == len(cands)
    proved.save(tmp_path / "r.json")
    assert len(tasc.load_rules(tmp_path / "r.json")) == len(proved)


def test_from_torch_exports_through_torch_onnx(monkeypatch, squeezenet):
    calls = []

    def export(module, args, path, **kw):  # stands in for torch.onnx.export: writes the real model
        calls.append((module, args, kw))
        with open(squeezenet.path, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())

    fake = types.ModuleType("torch")
    fake.onnx = types.SimpleNamespace(export=export)
    monkeypatch.setitem(sys.modules, "torch", fake)
    m = tasc.from_torch("module", squeezenet.x)
    assert calls and calls[0][1] == (squeezenet.x,) and calls[0][2]["opset_version"] == 17
    assert rel_l2(tasc.run(m, [squeezenet.x])[0], squeezenet.ref) <= TOL


# --- errors ------------------------------------------------------------------------------------------

def expect(exc, status, needle, fn, *args, **kw):
    with pytest.raises(exc) as info:
        fn(*args, **kw)
    assert isinstance(info.value, tasc.Error) and info.value.status == status
    assert needle in str(info.value), str(info.value)
    return info.value


def test_bad_files(tmp_path):
    e = expect(tasc.InputError, 1, "no/such/model.onnx", tasc.load, "no/such/model.onnx")
    assert isinstance(e, ValueError)
    expect(tasc.InputError, 1, "no/such/model.json", tasc.load, "no/such/model.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tasc-model", "version": 1, "nodes": [}')
    expect(tasc.InputError, 1, str(bad), tasc.load, bad)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x01\x02not protobuf")
    expect(tasc.InputError, 1, str(junk), tasc.load, junk)
    expect(tasc.InputError, 1, "broken", tasc.from_json, "{", "broken")
    expect(tasc.InputError, 1, "no/such/rules.json", tasc.load_rules, "no/such/rules.json")
    expect(tasc.UsageError, 2, "positive value", tasc.load, "x.onnx", dims={"batch": 0})


def test_weight_files_stay_in_the_model_folder(tmp_path):
    np.full(12, 0.5, "<f4").tofile(tmp_path / "outside.bin")
    sub = tmp_path / "m"
    sub.mkdir()
    model = json.loads(TINY)
    model["weights"][0]["init"] = {"kind": "file", "path": "../outside.bin", "offset": 0}
    (sub / "m.json").write_text(json.dumps(model))
    expect(tasc.InputError, 1, "outside the model's folder", tasc.load, sub / "m.json")
    m = tasc.load(sub / "m.json", allow_outside_paths=True)
    assert tasc.run(m, [np.ones((2, 3), np.float32)])[0].shape == (2, 4)


def test_bad_options(tiny):
    expect(tasc.UsageError, 2, "search: unknown value 'greedy'", tasc.optimize, tiny, search="greedy")
    expect(tasc.UsageError, 2, "builtins: unknown value 'some'", tasc.optimize, tiny, builtins="some")
    expect(tasc.UsageError, 2, "alpha", tasc.optimize, tiny, alpha=0.5)
    expect(tasc.UsageError, 2, "budget", tasc.optimize, tiny, budget=-1)
    expect(tasc.UsageError, 2, "cost: unknown value 'guess'", tasc.optimize, tiny, cost="guess")
    expect(tasc.UsageError, 2, "warp_speed", tasc.optimize, tiny, cost_set=["warp_speed=9"])
    expect(tasc.InputError, 1, "no/such/rules.json", tasc.optimize, tiny, rules="no/such/rules.json")
    expect(tasc.UsageError, 2, "device", tasc.run, tiny, device="tpu")
    expect(tasc.UsageError, 2, "threads", tasc.run, tiny, threads=-1)
    with pytest.raises(TypeError):
        tasc.optimize(tiny, rules=42)
    if not tasc.has_cuda():
        expect(tasc.ResourceError, 3, "without CUDA", tasc.optimize, tiny, cost="measured")
        expect(tasc.ResourceError, 3, "without CUDA", tasc.bench, tiny)
        expect(tasc.ResourceError, 3, "without CUDA", tasc.run, tiny, device="gpu")
        assert not tasc.gpu_available()


def test_shape_errors(tiny):
    e = expect(tasc.InputError, 1, "shape (3,2) does not match the model's (2,3)", tasc.run, tiny,
               [np.zeros((3, 2), np.float32)])
    assert "'x'" in str(e)
    expect(tasc.UsageError, 2, "2 input buffers given", tasc.run, tiny, [np.zeros((2, 3))] * 2)
    expect(tasc.InputError, 1, "no input named 'z'", tasc.run, tiny, {"z": np.zeros((2, 3))})


def test_write_errors(tiny, case, tmp_path):
    expect(tasc.InputError, 1, "/nonexistent-dir/", tiny.save, "/nonexistent-dir/m.json")
    expect(tasc.InputError, 1, "/nonexistent-dir/m.onnx", tiny.export_onnx, "/nonexistent-dir/m.onnx")
    expect(tasc.InputError, 1, "tasc_model_save", case.model.to_json)  # weights held in memory


def test_failed_check_raises():
    # conv + batchnorm folds into one conv whose sums round differently: a tolerance of 0 fails
    convbn = tasc.from_json(json.dumps({
        "format": "tasc-model", "version": 1, "name": "convbn", "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "weights": [{"name": n, "shape": s, "init": {"kind": "random", "seed": k, "mean": m, "std": 0.3}}
                    for k, (n, s, m) in enumerate([("w", [4, 3, 3, 3], 0.0), ("s", [4], 1.0), ("b", [4], 0.0),
                                                   ("m", [4], 0.0)])]
                   + [{"name": "v", "shape": [4], "init": {"kind": "constant", "value": 1.7}}],
        "nodes": [{"name": "c", "op": "conv2d", "inputs": ["x", "w"], "params": {"pad": "same"}},
                  {"name": "y", "op": "batchnorm", "inputs": ["c", "s", "b", "m", "v"]}],
        "outputs": ["y"]}))
    expect(tasc.InputError, 1, "numerical check failed", tasc.optimize, convbn, check_tol=0.0)
    best, st = tasc.optimize(convbn)  # the default tolerance accepts the fold
    assert st.nodes_after == 1 and 0 < st.check_error <= TOL


def test_from_torch_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    expect(tasc.ResourceError, 3, "needs PyTorch", tasc.from_torch, object(), ())
