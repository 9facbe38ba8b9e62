#!/usr/bin/env bash
# bench/cost/run_device.sh OUT: on the GPU machine, from the repository root -- collect measured node
# times for calibrating the analytic cost model (`tasc cost fit`, bench/cost/README.md).
# For each zoo model, `tasc bench MODEL --optimize --cost measured` runs the optimizer's search
# with the measured cost model, which times every node configuration the search costs (the
# original graph's nodes and every rewrite it considers) and keeps them in the cache file
# OUT/cost_measured.txt (TASC_COST_CACHE; rt_cost.h has its format); the bench then times the
# original against the optimized graph end to end. Binary: TASC_GPU (default .device/rt/bin/tasc,
# its libraries in .device/rt/lib). Writes OUT/env.txt, OUT/bench.log, OUT/cost_measured.txt.
set -u
OUT=${1:?usage: bench/cost/run_device.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=${TASC_GPU:-$ROOT/.device/rt/bin/tasc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH, TASC_TUNE_TABLE
export TASC_COST_CACHE="$OUT/cost_measured.txt"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    "$GPU" --version
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
: >"$OUT/bench.log"
for m in resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet; do
    "$GPU" model "$m" --out "$TMP/$m.json" || continue
    echo "== $m" >>"$OUT/bench.log"
    timeout 250 "$GPU" bench "$TMP/$m.json" --optimize --cost measured --rules "$ROOT/rules/verified-4.json" \
        --no-cpu --reps 100 >>"$OUT/bench.log" 2>&1
    echo "bench $m exit $?" >>"$OUT/bench.log"
done
grep -c . "$OUT/cost_measured.txt"
grep -E "^== |speedup|exit" "$OUT/bench.log"
