#!/usr/bin/env python3
"""check_layers.py: every #include "..." in the sources names a header of the file's own layer or
of a layer below it (the layer table below mirrors CMakeLists.txt's tasc_layer calls and
README "Layout"). Prints each wrong-way include as FILE:LINE and exits 1; 0 when there is none.

Usage: python3 tests/layers/check_layers.py [REPO_ROOT]
"""
import os
import re
import sys

# layer: (folder, layers it may include from besides itself)
LAYERS = {
    "base": ("src/base", []),
    "ops": ("ops", ["base"]),
    "kernels": ("ops/cuda", ["ops", "base"]),
    "ladder": ("ops/cuda/ladder", ["kernels", "ops", "base"]),
    "graph": ("graph", ["ops", "base"]),
    "onnx": ("graph/onnx", ["graph", "ops", "base"]),
    "models": ("models", ["graph", "ops", "base"]),
    "rules": ("rules", ["graph", "ops", "base"]),
    "verifier": ("verifier", ["rules", "graph", "ops", "base"]),
    "enumerator": ("enumerator", ["rules", "graph", "ops", "base"]),
    "optimizer": ("src/optimizer", ["rules", "graph", "ops", "base"]),
    "runtime": ("src/runtime", ["optimizer", "rules", "graph", "ops", "kernels", "base"]),
    "api": ("src/api", ["runtime", "optimizer", "enumerator", "verifier", "rules", "models", "onnx",
                        "graph", "kernels", "ops", "base"]),
    "cli": ("src/cli", ["api", "runtime", "optimizer", "enumerator", "verifier", "rules", "models", "onnx",
                        "graph", "kernels", "ops", "base"]),
}
# headers generated at build time, or kept outside the layer's folder, and the layer that owns
# them: include/tasc.h is the api layer's public header
GENERATED = {"onnx.pb-c.h": "onnx", "tasc.h": "api"}
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_files(root):
    """{layer: set of file names directly in its folder} (subfolders belong to their own layer)."""
    out = {}
    for name, (folder, _) in LAYERS.items():
        path = os.path.join(root, folder)
        out[name] = {f for f in os.listdir(path) if f.endswith(SOURCE_EXT)} if os.path.isdir(path) else set()
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    files = layer_files(root)
    owner = {}
    for name, fs in files.items():
        for f in fs:
            owner.setdefault(f, []).append(name)
    for h, name in GENERATED.items():
        owner.setdefault(h, []).append(name)
    bad = checked = 0
    for name, (folder, deps) in LAYERS.items():
        allowed = set(deps) | {name}
        for f in sorted(files[name]):
            path = os.path.join(root, folder, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for ln, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    checked += 1
                    inc = os.path.basename(m.group(1))
                    where = owner.get(inc)
                    if not where:
                        print(f"{folder}/{f}:{ln}: includes \"{m.group(1)}\", a header of no layer")
                        bad += 1
                    elif not allowed.intersection(where):
                        print(f"{folder}/{f}:{ln}: layer {name} includes \"{m.group(1)}\" of layer "
                              f"{'/'.join(where)}, which is not below it")
                        bad += 1
    print(f"check_layers: {checked} includes checked, {bad} wrong-way")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
