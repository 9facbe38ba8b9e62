#!/usr/bin/env bash
# run.sh [BUILD] [PYTHON]: the Python layer's overhead (bench_run.py) on squeezenet, with one
# OpenMP thread (steadier on a shared machine) and with OpenMP's default; writes
# bench/api/results.md. BUILD (default build) must be configured with -DTASC_PYTHON=ON; PYTHON
# (default: the venv of scripts/setup.sh, else python3) needs numpy. Run from the repository root.
set -euo pipefail
BUILD=${1:-build}
PY=${2:-$HOME/.cache/tasc/py-venv/bin/python}
[ -x "$PY" ] || PY=python3
"$PY" bench/api/bench_run.py --build "$BUILD" --reps 15 --threads 1 --out bench/api/results.md
"$PY" bench/api/bench_run.py --build "$BUILD" --reps 15 --out bench/api/results.md --append
