#!/usr/bin/env bash
# setup.sh: install what tasc needs that is missing (idempotent; apt-get as root):
#   - the Debian packages of the build (and python3 with its headers and venv for the package);
#   - numpy and pytest for the Python package's tests, with pip into a virtual environment of
#     tasc's own ($TASC_PY_VENV, default ~/.cache/tasc/py-venv; `make test` builds the extension
#     for its interpreter), so the system Python is never modified. Without PyPI this step only
#     warns, and the Python tests report themselves skipped.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN) is expected on the machine already; without it tasc
# builds CPU-only.
#   setup.sh --corpus   also (only then: torch is large) the model corpus's environment
#     (bench/models/): CPU wheels of torch and torchvision, transformers, onnx, onnxscript and
#     onnxruntime, with pip into $TASC_CORPUS_VENV (default ~/.cache/tasc/corpus-venv).
set -euo pipefail
corpus=0
for a in "$@"; do
    case "$a" in
        --corpus) corpus=1 ;;
        *) echo "setup.sh: unknown option '$a' (usage: setup.sh [--corpus])" >&2; exit 2 ;;
    esac
done
pkgs=(cmake make gcc pkg-config libjansson-dev uthash-dev libz3-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3 python3-dev python3-venv
      xz-utils) # xz: the full 4-op rule set is kept compressed (rules/verified-4-full.json.xz)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
else
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "setup: done"
fi

VENV=${TASC_PY_VENV:-$HOME/.cache/tasc/py-venv}
if "$VENV/bin/python" -c "import numpy, pytest" 2>/dev/null; then
    echo "setup: Python test environment present ($VENV)"
elif python3 -m venv "$VENV" && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --timeout 60 numpy pytest; then
    echo "setup: numpy and pytest installed into $VENV"
else
    echo "setup: warning: could not install numpy and pytest into $VENV (PyPI unreachable?):" \
         "the Python tests will be skipped"
fi

if [ $corpus -eq 1 ]; then
    CV=${TASC_CORPUS_VENV:-$HOME/.cache/tasc/corpus-venv}
    if "$CV/bin/python" -c "import torch, torchvision, transformers, onnx, onnxscript, onnxruntime" 2>/dev/null; then
        echo "setup: model corpus environment present ($CV)"
    else
        pipq=(--quiet --disable-pip-version-check --timeout 120)
        # torch from its CPU index first, so that transformers' dependency on torch is already met
        # and pip does not fetch the CUDA build from PyPI; where that index cannot be reached, the
        # PyPI wheels (CUDA-enabled, larger, they run on the CPU as well).
        python3 -m venv "$CV"
        if ! "$CV/bin/python" -m pip install "${pipq[@]}" --retries 1 \
                --index-url https://download.pytorch.org/whl/cpu torch torchvision; then
            echo "setup: the PyTorch CPU index is unreachable: torch and torchvision from PyPI"
            "$CV/bin/python" -m pip install "${pipq[@]}" torch torchvision
        fi
        "$CV/bin/python" -m pip install "${pipq[@]}" transformers onnx onnxscript onnxruntime numpy
        echo "setup: model corpus environment installed into $CV"
    fi
fi
