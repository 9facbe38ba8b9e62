#!/usr/bin/env bash
# bench/runtime/autotune_device.sh OUT: on the GPU machine, from the repository root -- first-use
# tuning of the matmul (issue 17) measured in one call, with binaries from one package
# (AT_PKG, default .device-at/pkg.tar.xz: bin/tasc, bin/gpu_test_matmul, lib/ with the shared
# libraries the GPU machine lacks). The GPU is made one without tuning entries: no shipped tables
# (TASC_TUNE_DIR empty), no user table, an empty per-device cache (TASC_CACHE_DIR).
#  1. gpu_test_matmul (its first-use case included)                          -> OUT/gpu_test_matmul.log
#  2. `tasc bench models/bert.json` with the empty cache (tunes what it needs; the time is
#     reported), then twice alternating: the filled cache, and --no-autotune (the heuristic)
#                                                                              -> OUT/bert-*.log
#  3. `tasc kernels bench --versions tuned` at the bench sizes with an empty table (the
#     heuristic), `tasc kernels tune` of those sizes (epilogue none) into OUT/matmul_tune.txt,
#     the same bench with that table; heuristic / tuned per size      -> OUT/kernels-*.log, heuristic.md
#  4. `tasc kernels tune` of the BERT shapes for the other five epilogues into the same table
#     (the table shipped for this GPU: bench/runtime/matmul_tune_h200.txt) -> OUT/tune-epilogues.log
set -u
OUT=${1:?usage: bench/runtime/autotune_device.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${AT_PKG:-$ROOT/.device-at/pkg.tar.xz}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT" "$W/pkg" "$W/empty"
tar xJf "$PKG" -C "$W/pkg"
GPU=$W/pkg/bin/tasc
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS)
export LD_LIBRARY_PATH="$W/pkg/lib:$LD_LIBRARY_PATH"
export TASC_TUNE_DIR=$W/empty TASC_TUNE_TABLE=$W/no-user-table.txt TASC_CACHE_DIR=$W/cache
unset TASC_NO_AUTOTUNE
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    ldd "$GPU" | grep -E "not found|cudnn|cublas"
    date -u
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

t0=$(date +%s.%N)
timeout 200 "$W/pkg/bin/gpu_test_matmul" >"$OUT/gpu_test_matmul.log" 2>&1
echo "gpu_test_matmul exit $? ($(since "$t0") s)" | tee -a "$OUT/gpu_test_matmul.log"
tail -2 "$OUT/gpu_test_matmul.log"

t0=$(date +%s.%N)
timeout 200 "$GPU" bench models/bert.json >"$OUT/bert-first.log" 2>&1
echo "bert first (empty cache) exit $?, wall $(since "$t0") s" | tee -a "$OUT/bert-first.log"
for round in 1 2; do
    t0=$(date +%s.%N)
    timeout 100 "$GPU" bench models/bert.json >"$OUT/bert-cached-$round.log" 2>&1
    echo "bert cached exit $?, wall $(since "$t0") s" | tee -a "$OUT/bert-cached-$round.log"
    TASC_CACHE_DIR=$W/cache-none timeout 100 "$GPU" bench models/bert.json --no-autotune >"$OUT/bert-heuristic-$round.log" 2>&1
    echo "bert --no-autotune exit $?" | tee -a "$OUT/bert-heuristic-$round.log"
done
grep -h "tasc: tuned\|latency median\|tasc: .*heuristic" "$OUT"/bert-*.log
cp "$W/cache"/matmul-*.txt "$OUT/" 2>/dev/null

SIZES=1024,2048,4096,8192,4097,128x768x768,128x3072x768,128x768x3072,1024x768x768,1024x3072x768,1024x768x3072
TABLE=$OUT/matmul_tune.txt
: >"$W/empty/none.txt"
timeout 150 "$GPU" kernels bench --sizes $SIZES --versions tuned --fused none --reps 30 --table "$W/empty/none.txt" \
    --out "$OUT/kernels-heuristic.md" >"$OUT/kernels-heuristic.log" 2>&1
echo "kernels heuristic exit $?" | tee -a "$OUT/kernels-heuristic.log"
t0=$(date +%s.%N)
timeout 240 "$GPU" kernels tune --sizes $SIZES --epilogue none --table "$TABLE" >"$OUT/tune.log" 2>&1
echo "tune exit $?, $(since "$t0") s" | tee -a "$OUT/tune.log"
timeout 150 "$GPU" kernels bench --sizes $SIZES --versions tuned --fused none --reps 30 --table "$TABLE" \
    --out "$OUT/kernels-tuned.md" >"$OUT/kernels-tuned.log" 2>&1
echo "kernels tuned exit $?" | tee -a "$OUT/kernels-tuned.log"
python3 - "$OUT" <<'PY' | tee "$OUT/heuristic.md"
import json, sys
out = sys.argv[1]
def load(name):
    d = json.load(open(f"{out}/{name}.json"))
    return {f"{s['m']}x{s['n']}x{s['k']}" + (f"x{s['batch']}" if s['batch'] > 1 else ""):
            {r['version']: r for r in s['results']} for s in d['sizes']}
h, t = load("kernels-heuristic"), load("kernels-tuned")
print("| size | heuristic ms | % of cuBLAS | tuned ms | % of cuBLAS | heuristic / tuned |")
print("|---|---:|---:|---:|---:|---:|")
for k in h:
    a, b = h[k]["tuned"], t[k]["tuned"]
    print(f"| {k} | {a['median_ms']:.4f} | {a['pct_cublas']:.1f}% | {b['median_ms']:.4f} | {b['pct_cublas']:.1f}% | "
          f"{100 * b['median_ms'] / a['median_ms']:.1f}% |")
PY
t0=$(date +%s.%N)
timeout 200 "$GPU" kernels tune --sizes 128x768x768,128x3072x768,128x768x3072,1024x768x768,1024x3072x768,1024x768x3072 \
    --epilogue bias,relu,gelu,bias_relu,bias_gelu --table "$TABLE" >"$OUT/tune-epilogues.log" 2>&1
echo "tune epilogues exit $?, $(since "$t0") s" | tee -a "$OUT/tune-epilogues.log"
for f in tune.log tune-epilogues.log; do xz -9 "$OUT/$f"; done
ls -la "$OUT"
