#!/usr/bin/env bash
# explain_device.sh OUT: on the GPU machine, from the repository root -- the GPU tests of both
# precisions and the profiles behind issue 17's missed targets, in one call:
#  1. gpu_test_ops and gpu_test_matmul (FP32 and 3xTF32 cases) -> OUT/gpu_test_*.log
#  2. Nsight Compute on the 3xTF32 kernel and the tuned FP32 kernel at 4096^3 (speed of light,
#     compute workload, warp states, occupancy): where 3xTF32 stops short of 2x cuBLAS -> OUT/ncu-*.txt
#  3. `tasc bench ZOO --precision 3xtf32 --profile` and the FP32 profile for resnet50 and bert at
#     batch 1: where end-to-end 3xTF32 loses against FP32 -> OUT/e2e-*.log
# Binaries: .device/new/bin/{tasc,gpu_test_ops,gpu_test_matmul}, libraries .device/lib.
set -u
OUT=${1:?usage: bench/matmul/explain_device.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/.device/new/bin
GPU=$BIN/tasc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/bench/device_env.sh"
device_prelude "$OUT" # OUT/cache, .device/lib, OUT/env.txt
cat "$ROOT/.device/new/VERSION" >>"$OUT/env.txt" 2>&1
for t in gpu_test_ops gpu_test_matmul; do
    (cd "$ROOT" && timeout 240 "$BIN/$t") >"$OUT/$t.log" 2>&1
    echo "exit $?" >>"$OUT/$t.log"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats"
for k in 3xtf32:mm_3xtf32_kernel tuned:mm_wt_kernel; do
    v=${k%%:*}
    p=fp32
    [ "$v" = 3xtf32 ] && p=3xtf32
    timeout 120 "$NCU" -k "regex:${k#*:}" -s 3 -c 1 $SECTIONS "$GPU" kernels bench --sizes 4096 --versions "$v" \
        --precision "$p" --reps 3 --warmup 1 --fused none --out "$TMP/k.md" >"$OUT/ncu-$v-4096.txt" 2>&1
done
for m in resnet50 bert; do
    "$GPU" model "$m" --out "$TMP/$m.json" >/dev/null || continue
    "$GPU" optimize "$TMP/$m.json" --rules "$ROOT/rules/verified-4.json" --out "$TMP/$m.opt.json" --no-check --quiet
    timeout 100 "$GPU" bench "$TMP/$m.opt.json" --reps 5 --warmup 1 --no-cpu >/dev/null 2>&1 # first use: tunes
    for p in fp32 3xtf32; do
        timeout 100 "$GPU" bench "$TMP/$m.opt.json" --precision "$p" --reps 200 --profile >"$OUT/e2e-$m-$p.log" 2>&1
    done
done
