#!/usr/bin/env bash
# bench/runtime/tune_zoo.sh OUT [SECONDS]: on the GPU machine, from the repository root -- tune the
# matmul problems the zoo's original and optimized graphs run that bench/runtime/matmul_tune.txt
# does not hold (matmul nodes and the GEMM path of convolutions), then measure the zoo again.
#  1. bench/optimize/run_device.sh with TASC_MM_MISSES: every table miss is logged (matmul.h);
#  2. `tasc kernels tune` on the distinct misses, in batches of 16 per epilogue, each batch
#     saved into the table, until SECONDS (default 300) have passed;
#  3. bench/optimize/run_device.sh again with the grown table.
# Binaries: TASC_GPU (default .device/rt/bin/tasc) and TASC_OPT, as run_device.sh takes them.
# Writes OUT/misses.txt, OUT/tune.log, OUT/matmul_tune.txt (the grown table; copy it to
# bench/runtime/ to keep it), OUT/before.txt and OUT/after.txt (run_device.sh summaries),
# OUT/bench.log, OUT/bench.jsonl and OUT/env.txt of the second run.
set -u
OUT=${1:?usage: bench/runtime/tune_zoo.sh OUT [SECONDS]}
BUDGET=${2:-300}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=${TASC_GPU:-$ROOT/.device/rt/bin/tasc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH
TABLE="$ROOT/bench/runtime/matmul_tune.txt"
cp "$TABLE" "$OUT/matmul_tune.txt"
TASC_MM_MISSES="$TMP/miss.raw" bash "$ROOT/bench/optimize/run_device.sh" "$TMP/before" >/dev/null 2>&1
cp "$TMP/before/summary.txt" "$OUT/before.txt"
sort -u "$TMP/miss.raw" >"$OUT/misses.txt" 2>/dev/null
echo "$(wc -l <"$OUT/misses.txt") distinct problems missing from the table"
start=$(date +%s)
: >"$OUT/tune.log"
for epi in $(awk '{print $2}' "$OUT/misses.txt" | sort -u); do
    awk -v e="$epi" '$2 == e {print $1}' "$OUT/misses.txt" | split -l 16 - "$TMP/batch.$epi."
    for b in "$TMP"/batch."$epi".*; do
        if [ $(($(date +%s) - start)) -ge "$BUDGET" ]; then
            echo "time budget spent: batch $b of $epi left untuned" | tee -a "$OUT/tune.log"
            continue
        fi
        sizes=$(paste -sd, "$b")
        echo "== tune --epilogue $epi --sizes $sizes" >>"$OUT/tune.log"
        "$GPU" kernels tune --sizes "$sizes" --epilogue "$epi" --table "$OUT/matmul_tune.txt" >>"$OUT/tune.log" 2>&1
        echo "exit $?" >>"$OUT/tune.log"
    done
done
echo "tuning took $(($(date +%s) - start)) s" | tee -a "$OUT/tune.log"
cp "$OUT/matmul_tune.txt" "$TABLE"
bash "$ROOT/bench/optimize/run_device.sh" "$TMP/after" >/dev/null 2>&1
cp "$TMP/after/summary.txt" "$OUT/after.txt"
cp "$TMP/after/bench.log" "$TMP/after/bench.jsonl" "$TMP/after/env.txt" "$OUT/"
echo "before:"; cat "$OUT/before.txt"
echo "after:"; cat "$OUT/after.txt"
