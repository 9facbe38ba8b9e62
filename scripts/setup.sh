#!/usr/bin/env bash
# setup.sh: install what tasc needs that is missing (idempotent; apt-get as root):
#   - the Debian packages of the build (and python3 with its headers and venv for the package);
#   - numpy and pytest for the Python package's tests, with pip into a virtual environment of
#     tasc's own ($TASC_PY_VENV, default ~/.cache/tasc/py-venv; `make test` builds the extension
#     for its interpreter), so the system Python is never modified. Without PyPI this step only
#     warns, and the Python tests report themselves skipped.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN) is expected on the machine already; without it tasc
# builds CPU-only.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libjansson-dev uthash-dev libz3-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3 python3-dev python3-venv)
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
