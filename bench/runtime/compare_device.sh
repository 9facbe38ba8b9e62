#!/usr/bin/env bash
# compare_device.sh OUT [PARTS]: on the GPU machine, from the repository root -- two builds
# of tasc side by side in one call, for changes that must not move the GPU figures (a refactor):
# PARTS, comma-separated (default tests,kernels,zoo):
#   tests    gpu_test_ops and gpu_test_matmul of the NEW build
#   kernels  `tasc kernels bench` (every rung and the tuned kernel vs cuBLAS at the bench sizes,
#            fused bias+relu), OLD then NEW then OLD then NEW, so drift of the GPU's clocks shows as
#            a difference between the two rounds of one build
#   zoo      `tasc bench` of every zoo model (original vs optimized), in the same alternation
# Builds: .device/old/bin and .device/new/bin (tasc, gpu_test_*), and .device/lib, the shared
# libraries the GPU machine lacks (jansson, protobuf-c, z3), for both; the optimized zoo models come from NEW's `tasc optimize` with the
# shipped rules and are benchmarked by both builds. Writes OUT/env.txt, OUT/tests.log,
# OUT/kernels.log, OUT/zoo.log and OUT/summary.md.
set -u
OUT=${1:?usage: bench/runtime/compare_device.sh OUT [tests,kernels,zoo]}
PARTS=,${2:-tests,kernels,zoo},
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
GPU=$ROOT/.device/new/bin/tasc
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS), TASC_TUNE_TABLE
export LD_LIBRARY_PATH="$ROOT/.device/lib:$LD_LIBRARY_PATH"
declare -A BIN=([old]="$ROOT/.device/old/bin" [new]="$ROOT/.device/new/bin")
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    for b in old new; do echo "$b: $(git -C "$ROOT" log -1 --format=%h 2>/dev/null) $(cat "$ROOT/.device/$b/VERSION" 2>/dev/null)"; done
    ldd "$GPU" | grep -E "not found|cudnn|cublas"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [[ $PARTS == *,tests,* ]]; then
    : >"$OUT/tests.log"
    for t in gpu_test_ops gpu_test_matmul; do
        echo "== $t" >>"$OUT/tests.log"
        timeout 280 "$ROOT/.device/new/bin/$t" >>"$OUT/tests.log" 2>&1
        echo "$t exit $?" | tee -a "$OUT/tests.log"
        tail -2 "$OUT/tests.log"
    done
fi
if [[ $PARTS == *,kernels,* ]]; then
SIZES=1024,4096,8192,128x768x768,128x3072x768,128x768x3072
: >"$OUT/kernels.log"
for round in 1 2; do
    for b in old new; do
        echo "== kernels $b round $round" >>"$OUT/kernels.log"
        timeout 200 "${BIN[$b]}/tasc" kernels bench --sizes $SIZES --versions all --fused 128x3072x768 --reps 30 \
            --max-cell-s 4 --table "$ROOT/bench/matmul/matmul_tune.txt" >>"$OUT/kernels.log" 2>&1
        echo "kernels $b exit $?" >>"$OUT/kernels.log"
    done
done
fi

if [[ $PARTS == *,zoo,* ]]; then
: >"$OUT/zoo.log"
for m in resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet; do
    "${BIN[new]}/tasc" model "$m" --out "$TMP/$m.json" || continue
    "${BIN[new]}/tasc" optimize "$TMP/$m.json" --rules "$ROOT/rules/verified-4.json" --out "$TMP/$m.opt.json" --quiet \
        --no-check >/dev/null 2>&1 || continue
    for round in 1 2; do
        for b in old new; do
            timeout 120 "${BIN[$b]}/tasc" bench "$TMP/$m.json" "$TMP/$m.opt.json" --reps 200 --json "$TMP/r.json" \
                >>"$OUT/zoo.log" 2>&1
            ms=$(tr -d '\n' <"$TMP/r.json" 2>/dev/null | grep -o '"median_ms": *[0-9.]*' | sed 's/.*: *//' | tr '\n' ' ')
            echo "$m $b round $round median_ms(original optimized) $ms" | tee -a "$OUT/zoo.log"
            rm -f "$TMP/r.json"
        done
    done
done
fi

{
    echo "# old vs new build on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    echo
    echo "## tasc kernels bench: % of cuBLAS and fused bias+relu (two rounds per build)"
    [ -f "$OUT/kernels.log" ] && awk '/^== kernels/ {print "\n### " substr($0, 4); next} /^## % of cuBLAS/ {on=1} /^## Ladder/ {on=0}
         /^## Fused/ {on=1} on {print}' "$OUT/kernels.log"
    echo
    echo "## tasc bench, zoo (median ms of 200 CUDA graph replays)"
    echo
    [ -f "$OUT/zoo.log" ] && grep "median_ms" "$OUT/zoo.log"
} >"$OUT/summary.md"
cat "$OUT/summary.md"
