#!/usr/bin/env bash
# gpu_matmul.sh OUT [full|quick|explore]: the GPU half of issue 6, run on the GPU machine from the repo root.
# Runs the GPU correctness tests, autotunes the benchmark shapes into a tuning table, then runs
# the benchmark against cuBLAS with that table. Everything it writes goes under OUT:
#   test.log tune.log bench.log matmul_tune.txt results.md results.json resusage.txt
# Binaries come from .device/bin (built on the CPU machine for sm_90 by `cmake --build build-cuda`
# and copied there with the shared libraries the GPU machine may lack in .device/lib).
# quick: fewer sizes and reps (a smoke test of the whole pipeline). explore: the sizes that miss
# their targets, and Nsight Compute sections of chosen kernels at 4096 (ncu.txt).
set -u
OUT=${1:?usage: scripts/gpu_matmul.sh OUT [full|quick]}
MODE=${2:-full}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TASC_DEVICE_BIN:-$ROOT/.device/bin}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$ROOT/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if ldd "$BIN/tasc" | grep -q "libcublas.*not found"; then
    # cuBLAS from the Python wheels when the toolkit's copy is not on the path
    for d in $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null) \
             /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    done
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/test.log"
ldd "$BIN/tasc" | grep -E "cublas|cudart|not found" | tee -a "$OUT/test.log"
command -v cuobjdump >/dev/null && cuobjdump -res-usage "$BIN/tasc" > "$OUT/resusage.txt" 2>&1

echo "== gpu_test_matmul" | tee -a "$OUT/test.log"
timeout 300 "$BIN/gpu_test_matmul" >> "$OUT/test.log" 2>&1
echo "gpu_test_matmul exit $?" | tee -a "$OUT/test.log"
tail -3 "$OUT/test.log"

TABLE="$OUT/matmul_tune.txt"
if [ "$MODE" = explore ]; then
    SIZES=1024,2048,4096,8192,128x768x768,128x3072x768,128x768x3072,128x128x64x12
    FUSED=128x768x768,128x3072x768
    REPS=30
    TREPS=10
elif [ "$MODE" = quick ]; then
    SIZES=1024,4096,128x768x768,128x128x64x12
    FUSED=128x768x768
    REPS=30
    TREPS=5
else
    SIZES=256,512,1024,2048,4096,8192,1000,4097,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12
    FUSED=128x768x768,128x3072x768,128x768x3072,4096x3072x768
    REPS=30
    TREPS=15
fi
echo "== tune" | tee "$OUT/tune.log"
timeout 400 "$BIN/tasc" kernels tune --sizes "$SIZES" --reps $TREPS --table "$TABLE" >> "$OUT/tune.log" 2>&1
echo "tune exit $?" | tee -a "$OUT/tune.log"
timeout 200 "$BIN/tasc" kernels tune --sizes "$FUSED" --epilogue bias_relu --reps $TREPS --table "$TABLE" >> "$OUT/tune.log" 2>&1
echo "tune fused exit $?" | tee -a "$OUT/tune.log"
grep -E "best:|^[0-9]" "$OUT/tune.log"

echo "== bench"
VERSIONS=all
[ "$MODE" = explore ] && VERSIONS=v4,v5,v6,v7,v8,tuned
timeout 500 "$BIN/tasc" kernels bench --sizes "$SIZES" --versions $VERSIONS --fused "$FUSED" --reps $REPS \
    --table "$TABLE" --out "$OUT/results.md" > "$OUT/bench.log" 2>&1
echo "bench exit $?" | tee -a "$OUT/bench.log"
sed -n '/^## TFLOP/,/^## Relative/p' "$OUT/bench.log"
sed -n '/^## Fused/,$p' "$OUT/bench.log"

# Nsight Compute on chosen configurations at 4096 (explore, or full with NCU_CHOICES="cfg cfg ...")
if [ "$MODE" = explore ] && [ -z "${NCU_CHOICES:-}" ]; then
    NCU_CHOICES="128x128x8_w64x32_t8x8_s3_u8_b2 128x128x8_w64x32_t8x8_r2_u8_b1 128x256x8_w64x64_t8x16_r2_u8_b1"
fi
if [ -n "${NCU_CHOICES:-}" ]; then
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --print-details all"
    echo "== ncu ($NCU)" > "$OUT/ncu.txt"
    prof() { # regex version [choice]
        echo "==== $2 ${3:-}" >> "$OUT/ncu.txt"
        TASC_MM_CHOICE=${3:-} timeout 120 "$NCU" --clock-control none --kernel-name "regex:$1" --launch-count 1 $SECTIONS \
            "$BIN/tasc" kernels bench --sizes 4096 --versions $2 --reps 1 --warmup 0 --fused none --max-cell-s 100 \
            --table "$TABLE" >> "$OUT/ncu.txt" 2>&1
        echo "==== stalls $2 ${3:-}" >> "$OUT/ncu.txt"
        TASC_MM_CHOICE=${3:-} timeout 120 "$NCU" --clock-control none --kernel-name "regex:$1" --launch-count 1 \
            --metrics "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$" \
            "$BIN/tasc" kernels bench --sizes 4096 --versions $2 --reps 1 --warmup 0 --fused none --max-cell-s 100 \
            --table "$TABLE" 2>&1 | grep -E "stalled|==ERR|error" >> "$OUT/ncu.txt"
    }
    for c in $NCU_CHOICES; do prof mm_wt_kernel tuned "$c"; done
    grep -E "^====|Duration|Issue Slots Busy|Executed Instructions  |stalled_(barrier|long_scoreboard|short_scoreboard|mio_throttle|math_pipe_throttle|not_selected|wait|dispatch|lg_throttle|no_instruction|branch_resolving|selected)_" "$OUT/ncu.txt" | head -150
fi
