"""tasc: a TASO-style graph substitution optimizer, from Python.

Load a model (JSON or ONNX), optimize it with verified substitution rules, run it on the CPU
reference executor, and save or export the result::

    import numpy as np
    import tasc

    model = tasc.load("squeezenet1_1.onnx")
    best, stats = tasc.optimize(model, rules="default")     # the shipped, Z3-verified rule set
    print(stats.nodes_before, "->", stats.nodes_after, f"{stats.speedup:.2f}x predicted")
    x = np.random.rand(1, 3, 224, 224).astype(np.float32)
    (y,) = tasc.run(best, [x])
    best.export_onnx("squeezenet-opt.onnx")

The package is a thin layer over the C library's public API (``include/tasc.h``) through the
C extension ``tasc._tasc``. Every failure raises a :class:`tasc.Error` subclass chosen by the C
status (:class:`InputError` 1, :class:`UsageError` 2, :class:`ResourceError` 3,
:class:`InternalError` 4) and carrying the library's one-line message.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import tempfile
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tasc
from ._tasc import Error, InputError, InternalError, ResourceError, UsageError

__all__ = [
    "Error", "InputError", "UsageError", "ResourceError", "InternalError",
    "Model", "Rules", "TensorInfo", "OptimizeStats", "OptimizeResult", "Rewrite",
    "load", "from_json", "from_torch", "optimize", "run", "bench", "gpu_available",
    "load_rules", "generate_rules", "verify_rules", "default_rules_path", "has_cuda", "__version__",
]

__version__: str = _tasc.version()

PathLike = Union[str, "os.PathLike[str]"]
ArrayLike = Any  # anything numpy.asarray accepts

for _cls, _status in ((InputError, 1), (UsageError, 2), (ResourceError, 3), (InternalError, 4)):
    _cls.status = _status  # instances get .status from the C side too
Error.status = 0


class TensorInfo(NamedTuple):
    """A graph input or output: its name, dtype ("float32" or "int64") and shape."""

    name: str
    dtype: str
    shape: Tuple[int, ...]


class Model:
    """A model graph (an opaque handle of the C library).

    Made by :func:`load`, :func:`from_json`, :func:`from_torch` or :func:`optimize`. Models are
    immutable: optimizing one returns a new one.
    """

    __slots__ = ("_h", "_name", "_inputs", "_outputs", "_keep")

    def __init__(self, handle: Any, keep: Any = None) -> None:
        self._h = handle
        self._keep = keep  # what must outlive the model (from_torch's folder of external data)
        name, ins, outs = _tasc.io(handle)
        self._name: str = name
        self._inputs = [TensorInfo(n, d, tuple(s)) for n, d, s in ins]
        self._outputs = [TensorInfo(n, d, tuple(s)) for n, d, s in outs]

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def inputs(self) -> List[TensorInfo]:
        """The graph inputs, in order."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorInfo]:
        """The graph outputs, in order."""
        return list(self._outputs)

    def save(self, path: PathLike) -> None:
        """Write the model as tasc JSON; weights held in memory go to the sidecar PATH.weights.bin.

        Both files are written through temporaries and renamed: a failure leaves nothing at path.
        """
        _tasc.save(self._h, os.fspath(path))

    def export_onnx(self, path: PathLike) -> None:
        """Write the model as an ONNX model (opset 17) with every weight as an initializer."""
        _tasc.export_onnx(self._h, os.fspath(path))

    def to_json(self) -> str:
        """The tasc JSON text (raises InputError for weights held in memory: use save())."""
        return _tasc.to_json(self._h)

    def to_dot(self) -> str:
        """Graphviz DOT text; nodes made by a rewrite are filled."""
        return _tasc.to_dot(self._h)

    def info(self) -> Dict[str, Any]:
        """What ``tasc info --json`` prints: name, inputs, outputs, nodes, op_counts, flops,
        multiply_adds, params, param_bytes, activation_bytes (and weights)."""
        st = _tasc.stats(self._h)
        return {
            "name": self._name,
            "inputs": [_tensor_dict(t) for t in self._inputs],
            "outputs": [_tensor_dict(t) for t in self._outputs],
            **st,
        }

    def __repr__(self) -> str:
        return "<tasc.Model %r: %d nodes, inputs %s, outputs %s>" % (
            self._name, _tasc.stats(self._h)["nodes"], _shapes(self._inputs), _shapes(self._outputs))


def _tensor_dict(t: TensorInfo) -> Dict[str, Any]:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape)}


def _shapes(ts: Sequence[TensorInfo]) -> str:
    return ", ".join("%s%s" % (t.name, list(t.shape)) for t in ts)


class Rules:
    """A validated rule set (the format of rules/README.md)."""

    __slots__ = ("_h",)

    def __init__(self, handle: Any) -> None:
        self._h = handle

    def __len__(self) -> int:
        return _tasc.rules_count(self._h)

    def save(self, path: PathLike) -> None:
        """Write the rule file (deterministic bytes)."""
        _tasc.save_rules(self._h, os.fspath(path))

    def __repr__(self) -> str:
        return "<tasc.Rules: %d rules>" % len(self)


class Rewrite(NamedTuple):
    """One rule or built-in rewrite applied by the optimizer, and how often."""

    name: str
    reverse: bool  # a rule applied from its dst side to its src side
    times: int


@dataclasses.dataclass(frozen=True)
class OptimizeStats:
    """What :func:`optimize` reports (costs are the cost model's predictions, in microseconds)."""

    cost_before_us: float
    cost_after_us: float
    nodes_before: int
    nodes_after: int
    rewrites_applied: int    # in all: the sum of rewrites[i].times
    rewrites: List[Rewrite]  # by name, most applied first
    expanded: int
    candidates: int
    queued: int
    time_limited: bool
    folded: int
    search_s: float
    optimize_s: float
    check_s: float
    check_error: float  # largest relative L2 error of any output; -1 when the check was off

    @property
    def speedup(self) -> float:
        """Predicted speedup, cost before over cost after."""
        return self.cost_before_us / self.cost_after_us if self.cost_after_us > 0 else 1.0


class OptimizeResult(NamedTuple):
    """The optimized model and its statistics (unpacks as ``model, stats``)."""

    model: Model
    stats: OptimizeStats


def load(path: PathLike, *, random_weights: bool = False, weights_seed: int = 0,
         dims: Optional[Mapping[str, int]] = None, max_elements: int = 0, allow_outside_paths: bool = False) -> Model:
    """Load a tasc JSON model, or an ONNX model (a path ending in .onnx, opsets 13-18).

    The options are the CLI's: ``random_weights`` gives seeded values (``weights_seed``) to
    weights whose external data is missing, ``dims`` fixes symbolic input dimensions by name,
    ``max_elements`` caps tensor sizes (0: $TASC_MAX_ELEMENTS or 2**31), ``allow_outside_paths``
    lets weight files and external data lie outside the model's folder.
    Raises InputError for a missing or bad file.
    """
    return Model(_tasc.load(os.fspath(path), **_load_options(random_weights, weights_seed, dims, max_elements,
                                                             allow_outside_paths)))


_LOAD_OPTIONS = ("random_weights", "weights_seed", "dims", "max_elements", "allow_outside_paths")


def _load_options(random_weights: bool = False, weights_seed: int = 0, dims: Optional[Mapping[str, int]] = None,
                  max_elements: int = 0, allow_outside_paths: bool = False) -> Dict[str, Any]:
    return {"random_weights": bool(random_weights), "weights_seed": int(weights_seed),
            "dims": None if dims is None else {str(k): int(v) for k, v in dims.items()},
            "max_elements": int(max_elements), "allow_outside_paths": bool(allow_outside_paths)}


def from_json(text: str, where: Optional[str] = None) -> Model:
    """A model from tasc JSON text (``where`` names it in messages)."""
    return Model(_tasc.from_json(text, where))


def from_torch(module: Any, example_inputs: Any, *, opset: int = 17, **load_options: Any) -> Model:
    """A PyTorch module as a tasc model, through ``torch.onnx.export``.

    ``example_inputs`` is a tensor or a tuple of tensors as ``module(*example_inputs)`` takes
    them; their shapes become the model's. Extra keyword arguments go to :func:`load`. Raises
    ResourceError when torch is not installed.
    """
    try:
        torch = importlib.import_module("torch")
    except ImportError as e:
        raise ResourceError("from_torch needs PyTorch: pip install torch (%s)" % e) from e
    args = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    folder = tempfile.TemporaryDirectory(prefix="tasc-torch-")
    path = os.path.join(folder.name, "model.onnx")
    try:
        torch.onnx.export(module, args, path, opset_version=opset, dynamo=False)
    except TypeError:  # a torch without the dynamo switch (before 2.5)
        torch.onnx.export(module, args, path, opset_version=opset)
    unknown = sorted(set(load_options) - set(_LOAD_OPTIONS))
    if unknown:
        raise UsageError("from_torch: unknown options %s" % ", ".join(unknown))
    handle = _tasc.load(path, **_load_options(**load_options))
    # weights kept in external data files stay in that folder: it lives as long as the model
    return Model(handle, keep=folder)


def load_rules(path: PathLike) -> Rules:
    """Load and validate a rule file."""
    return Rules(_tasc.load_rules(os.fspath(path)))


def default_rules_path() -> str:
    """The shipped, Z3-verified 4-op rule set: $TASC_RULES, else rules/verified-4.json of the
    source tree the library was built from (ResourceError when missing)."""
    return _tasc.default_rules_path()


def _rules_handle(rules: Union[None, str, "os.PathLike[str]", Rules]) -> Any:
    if rules is None or (isinstance(rules, str) and rules == "none"):
        return None
    if isinstance(rules, Rules):
        return rules._h
    if isinstance(rules, str) and rules == "default":
        return _tasc.load_rules(default_rules_path())
    if isinstance(rules, (str, os.PathLike)):
        return _tasc.load_rules(os.fspath(rules))
    raise TypeError("rules must be None, 'none', 'default', a path or a tasc.Rules, not %s" % type(rules).__name__)


def optimize(model: Model, rules: Union[None, str, "os.PathLike[str]", Rules] = None, *, search: str = "backtrack",
             builtins: str = "all", alpha: float = 1.05, budget: int = 1000, time_limit: float = 8.0,
             cost: str = "analytic", cost_set: Sequence[str] = (), check: bool = True, check_seeds: int = 3,
             check_tol: float = 1e-4, progress: bool = False) -> OptimizeResult:
    """Optimize a model as ``tasc optimize`` does; returns ``(model, stats)``.

    rules: None or "none" (built-in rewrites only), "default" (the shipped verified 4-op set), a
    rule file's path, or a :class:`Rules`. search: "backtrack" (TASO's cost-based backtracking);
    builtins: "all", or "minimal" (only rewrites that are not substitutions: the rules do the
    rest, as ``tasc optimize --builtins minimal``). alpha, budget, time_limit (seconds, 0: none): the search's relaxation, graphs
    expanded and wall-clock limit. cost: "analytic" (H100 roofline; ``cost_set`` overrides its
    constants, "NAME=V") or "measured" (CUDA builds on a GPU). With ``check`` the result is
    compared with the model on the CPU executor (``check_seeds`` seeds, relative L2 error at most
    ``check_tol``) and InputError is raised when it differs. Bad option values raise UsageError.
    """
    handle, st = _tasc.optimize(model._h, _rules_handle(rules), builtins, search, float(alpha), int(budget),
                                float(time_limit), cost, [str(s) for s in cost_set], bool(check), int(check_seeds),
                                float(check_tol), bool(progress))
    st["rewrites"] = [Rewrite(n, r, c) for n, r, c in st["rewrites"]]
    return OptimizeResult(Model(handle), OptimizeStats(**st))


def _as_input(x: ArrayLike) -> np.ndarray:
    """x as a float32 C-contiguous array: the same object when it already is one (zero copy)."""
    a = np.asarray(x)
    if a.dtype != np.float32:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


def run(model: Model, inputs: Union[None, Sequence[Optional[ArrayLike]], Mapping[str, ArrayLike]] = None, *,
        seed: int = 0, threads: int = 0, device: str = "cpu") -> Union[List[np.ndarray], Dict[str, np.ndarray]]:
    """Run a model on the CPU reference executor (or, device="gpu", the GPU runtime).

    inputs: a list in the model's input order, a dict by input name, or None. Inputs left out
    (None entries, names not in the dict) are generated from ``seed`` as ``tasc run --seed``
    does. float32 C-contiguous arrays are used in place; anything else is converted (int64 token
    ids become exact floats). Returns the outputs as float32 arrays: a dict by output name when
    inputs was a dict, else a list. Wrong shapes raise InputError, a wrong number of inputs
    UsageError. Results do not depend on ``threads`` (0: OpenMP's choice).
    """
    names = [t.name for t in model._inputs]
    if inputs is None:
        arrays: List[Optional[np.ndarray]] = [None] * len(names)
    elif isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise InputError("%s: the model has no input named %s (inputs: %s)" % (
                model.name, ", ".join(repr(u) for u in unknown), ", ".join(names)))
        arrays = [None if n not in inputs else _as_input(inputs[n]) for n in names]
    else:
        arrays = [None if x is None else _as_input(x) for x in inputs]
    outs = [np.empty(t.shape, dtype=np.float32) for t in model._outputs]
    if device not in ("cpu", "gpu"):
        raise UsageError("device: unknown value %r (cpu or gpu)" % (device,))
    _tasc.run(model._h, arrays, outs, int(seed), int(threads), device == "gpu")
    if isinstance(inputs, Mapping):
        return {t.name: o for t, o in zip(model._outputs, outs)}
    return outs


def bench(model: Model, *, reps: int = 200, warmup: int = 20, seed: int = 0, cuda_graph: bool = True) -> Dict[str, Any]:
    """GPU latency of a model as ``tasc bench MODEL`` measures it (CUDA graph replay, FP32).

    Returns median_ms, min_ms, p90_ms, mean_ms, device_bytes, nodes_run, cuda_graph, device.
    Raises ResourceError in a build without CUDA or on a machine without a GPU.
    """
    return _tasc.bench(model._h, int(warmup), int(reps), int(seed), not cuda_graph)


def gpu_available() -> bool:
    """True when this build has CUDA and a GPU is usable."""
    try:
        _tasc.gpu_available()
        return True
    except ResourceError:
        return False


def has_cuda() -> bool:
    """True when the library was built with the CUDA runtime."""
    return _tasc.has_cuda()


def generate_rules(max_ops: int = 3, *, ops: Optional[Sequence[str]] = None, threads: int = 0) -> Tuple[Rules, Dict[str, Any]]:
    """Enumerate graphs of up to ``max_ops`` operators and return the candidate rules with the
    enumerator's counts (``tasc generate``)."""
    handle, st = _tasc.generate_rules(int(max_ops), None if ops is None else ",".join(ops), int(threads))
    return Rules(handle), st


def verify_rules(rules: Rules, *, timeout: float = 10.0, threads: int = 0, numeric_check: bool = True,
                 axioms: Optional[PathLike] = None, cache: Optional[PathLike] = None) -> Tuple[Rules, Rules, Dict[str, Any]]:
    """Prove candidate rules with Z3 (``tasc verify``): returns (proved, quarantined, counts)."""
    p, q, st = _tasc.verify_rules(rules._h, float(timeout), int(threads), bool(numeric_check),
                                  None if axioms is None else os.fspath(axioms), None if cache is None else os.fspath(cache))
    return Rules(p), Rules(q), st
