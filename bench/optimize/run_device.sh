#!/usr/bin/env bash
# bench/optimize/run_device.sh OUT: on the GPU machine, from the repository root -- optimize each zoo
# model with `tasc optimize` (defaults; the shipped rules/verified-4.json, given explicitly since the
# carried binary was built elsewhere, or the generator's 3-op candidates where it is missing) and
# time the original against the optimized model with `tasc bench` (median of 200 CUDA graph
# replays, alternating), so the analytic model's predicted speedup stands next to a measured one.
# Binaries: TASC_OPT (a tasc with `optimize`, default .device/opt/tasc-opt) and TASC_GPU (a CUDA
# build with `bench`, default .device/rt/bin/tasc, its libraries in .device/rt/lib); the matmul
# tuning table bench/runtime/matmul_tune.txt. Writes OUT/env.txt, OUT/optimize.log, OUT/bench.log,
# OUT/bench.jsonl and OUT/summary.txt (one line per model).
set -u
OUT=${1:?usage: bench/optimize/run_device.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OPT=${TASC_OPT:-$ROOT/.device/opt/tasc-opt}
GPU=${TASC_GPU:-$ROOT/.device/rt/bin/tasc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH, TASC_TUNE_TABLE
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    ldd "$GPU" "$OPT" | grep -E "not found|cudnn|cublas|z3"
    "$GPU" --version
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if ldd "$GPU" "$OPT" | grep -q "not found"; then
    echo "missing shared libraries"
    exit 1
fi
if [ -f "$ROOT/rules/verified-4.json" ]; then
    cp "$ROOT/rules/verified-4.json" "$TMP/rules.json"
else
    "$OPT" generate --max-ops 3 --out "$TMP/rules.json" >/dev/null || exit 1
fi
: >"$OUT/optimize.log"
: >"$OUT/bench.log"
: >"$OUT/bench.jsonl"
: >"$OUT/summary.txt"
for m in resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet; do
    "$OPT" model "$m" --out "$TMP/$m.json" || continue
    { echo "== $m"; "$OPT" optimize "$TMP/$m.json" --rules "$TMP/rules.json" --out "$TMP/$m.opt.json" --quiet --no-check; } \
        >>"$OUT/optimize.log" 2>&1
    pred=$(grep -A30 "^== $m\$" "$OUT/optimize.log" | sed -n 's/.*predicted speedup \([0-9.]*\)x.*/\1/p' | head -1)
    echo "== $m" >>"$OUT/bench.log"
    timeout 200 "$GPU" bench "$TMP/$m.json" "$TMP/$m.opt.json" --reps 200 --json "$TMP/$m.bench.json" \
        >>"$OUT/bench.log" 2>&1
    echo "bench $m exit $?" >>"$OUT/bench.log"
    if [ -f "$TMP/$m.bench.json" ]; then
        tr -d '\n' <"$TMP/$m.bench.json" >>"$OUT/bench.jsonl"
        echo >>"$OUT/bench.jsonl"
        meas=$(tr -d '\n' <"$TMP/$m.bench.json" | sed -n 's/.*"speedup": *\([0-9.]*\).*/\1/p')
        ms=$(tr -d '\n' <"$TMP/$m.bench.json" | grep -o '"median_ms": *[0-9.]*' | sed 's/.*: *//' | tr '\n' ' ')
        echo "$m predicted ${pred}x measured ${meas}x median_ms(original optimized) $ms" | tee -a "$OUT/summary.txt"
    else
        echo "$m predicted ${pred}x bench failed" | tee -a "$OUT/summary.txt"
    fi
done
