#!/usr/bin/env bash
# run.sh PYTHON BUILD_DIR [SANITIZER_RUNTIMES]: ctest's python_api -- pytest over python/tests
# with the package as built in BUILD_DIR/python (the extension and the copied .py files).
# SANITIZER_RUNTIMES (the sanitizer build): the ASan/UBSan runtime libraries, preloaded into the
# interpreter (which is not instrumented itself) so that the instrumented extension can load;
# leak detection is off there, since the interpreter keeps memory alive at exit by design.
# Exit 77 (skipped) when PYTHON lacks numpy or pytest (scripts/setup.sh installs them).
# Runs from the repository root.
set -u
PY=${1:?usage: run.sh PYTHON BUILD_DIR [SANITIZER_RUNTIMES]}
BUILD=${2:?usage: run.sh PYTHON BUILD_DIR [SANITIZER_RUNTIMES]}
PRELOAD=${3:-}
if ! "$PY" -c "import numpy, pytest" 2>/dev/null; then
    echo "SKIPPED: $PY lacks numpy or pytest (scripts/setup.sh installs them into its virtual environment)"
    exit 77
fi
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
if [ -n "$PRELOAD" ]; then
    export LD_PRELOAD=$PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:protect_shadow_gap=0 # last wins
fi
exec "$PY" -m pytest -q -p no:cacheprovider python/tests
