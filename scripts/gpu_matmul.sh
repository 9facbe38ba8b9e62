#!/usr/bin/env bash
# gpu_matmul.sh OUT [full|quick|explore]: the GPU half of issue 6, run on the GPU machine from the repo root.
# Runs the GPU correctness tests, autotunes the benchmark shapes into a tuning table, then runs
# the benchmark against cuBLAS with that table, and the timing-order probe. Everything it writes
# goes under OUT: test.log tune.log bench.log matmul_tune.txt results.md results.json probe.txt
# (full mode also runtime_matmul_tune.txt: the table for bench/runtime/).
# Binaries come from .device/bin (built on the CPU machine for sm_90 by `cmake --build build-cuda`
# and copied there with the shared libraries the GPU machine may lack in .device/lib).
# quick: fewer sizes and reps (a smoke test of the whole pipeline). explore: the sizes that miss
# their targets, tuned into a copy of the committed table, and the probe before and after.
set -u
OUT=${1:?usage: scripts/gpu_matmul.sh OUT [full|quick|explore]}
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

echo "== gpu_test_matmul" | tee -a "$OUT/test.log"
timeout 300 "$BIN/gpu_test_matmul" >> "$OUT/test.log" 2>&1
echo "gpu_test_matmul exit $?" | tee -a "$OUT/test.log"
tail -3 "$OUT/test.log"

TABLE="$OUT/matmul_tune.txt"
PROBE_SIZES=1024,128x768x768,128x3072x768,128x128x64x12
if [ "$MODE" = explore ]; then
    # the shapes that miss their targets; the big squares keep their committed table entries
    SIZES=256,512,1024,1000,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12
    FUSED=128x768x768,128x3072x768,128x768x3072
    BENCH_SIZES=1024,1000,4096,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12
    REPS=30
    TREPS=15
    cp "$ROOT/bench/matmul/matmul_tune.txt" "$TABLE"
    echo "== probe, committed table" > "$OUT/probe.txt"
    timeout 120 "$BIN/tasc" kernels probe --sizes $PROBE_SIZES --table "$TABLE" >> "$OUT/probe.txt" 2>&1
elif [ "$MODE" = quick ]; then
    SIZES=1024,4096,128x768x768,128x128x64x12
    FUSED=128x768x768
    BENCH_SIZES=$SIZES
    REPS=30
    TREPS=5
else
    SIZES=256,512,1024,2048,4096,8192,1000,4097,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12
    FUSED=128x768x768,128x3072x768,128x768x3072,4096x3072x768
    BENCH_SIZES=$SIZES
    REPS=30
    TREPS=15
fi
echo "== tune" | tee "$OUT/tune.log"
timeout 400 "$BIN/tasc" kernels tune --sizes "$SIZES" --reps $TREPS --table "$TABLE" >> "$OUT/tune.log" 2>&1
echo "tune exit $?" | tee -a "$OUT/tune.log"
timeout 200 "$BIN/tasc" kernels tune --sizes "$FUSED" --epilogue bias_relu --reps $TREPS --table "$TABLE" >> "$OUT/tune.log" 2>&1
echo "tune fused exit $?" | tee -a "$OUT/tune.log"
if [ "$MODE" = full ]; then
    # the model runtime's table (bench/runtime/matmul_tune.txt): this table plus the zoo's other shapes
    RT_TABLE="$OUT/runtime_matmul_tune.txt"
    cp "$TABLE" "$RT_TABLE"
    { timeout 100 "$BIN/tasc" kernels tune --sizes 128x768x768,128x3072x768,128x768x3072,128x2304x768,1x1000x2048 \
          --epilogue bias --reps $TREPS --table "$RT_TABLE"
      timeout 30 "$BIN/tasc" kernels tune --sizes 128x3072x768 --epilogue bias_gelu --reps $TREPS --table "$RT_TABLE"
      timeout 30 "$BIN/tasc" kernels tune --sizes 1x512x512 --epilogue none --reps $TREPS --table "$RT_TABLE"
    } >> "$OUT/tune.log" 2>&1
    echo "runtime table tune exit $?" | tee -a "$OUT/tune.log"
fi
grep -E "best:|^[0-9]" "$OUT/tune.log"

echo "== bench"
VERSIONS=all
[ "$MODE" = explore ] && VERSIONS=v6,v7,v8,tuned
timeout 500 "$BIN/tasc" kernels bench --sizes "$BENCH_SIZES" --versions $VERSIONS --fused "$FUSED" --reps $REPS \
    --max-cell-s 8 --table "$TABLE" --out "$OUT/results.md" > "$OUT/bench.log" 2>&1
echo "bench exit $?" | tee -a "$OUT/bench.log"
sed -n '/^## % of cuBLAS/,/^## Ladder/p' "$OUT/bench.log"
sed -n '/^## Fused/,$p' "$OUT/bench.log"

# the timing-order probe with the table just made
echo "== probe, this table" >> "$OUT/probe.txt"
timeout 120 "$BIN/tasc" kernels probe --sizes $PROBE_SIZES --table "$TABLE" >> "$OUT/probe.txt" 2>&1
echo "probe exit $?" >> "$OUT/probe.txt"

# Nsight Compute on the tuned kernel and cuBLAS at chosen sizes (NCU_SIZES=a,b,...): every kernel
# of a one-rep bench but the harness's own (fill, reference, error), into ncu.txt
if [ -n "${NCU_SIZES:-}" ]; then
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
    SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats"
    echo "== ncu ($NCU)" > "$OUT/ncu.txt"
    for sz in ${NCU_SIZES//,/ }; do
        echo "==== $sz" >> "$OUT/ncu.txt"
        timeout 120 "$NCU" --clock-control none --kernel-name "regex:^(?!mm_(fill|ref|err)).*" $SECTIONS \
            "$BIN/tasc" kernels bench --sizes "$sz" --versions tuned --reps 1 --warmup 0 --fused none \
            --table "$TABLE" >> "$OUT/ncu.txt" 2>&1
    done
    grep -E "^====|^  [a-zA-Z_].*\(|Duration|Issue Slots Busy|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|No Eligible|Theoretical Occ|Waves Per SM|Dynamic Shared" "$OUT/ncu.txt" | head -200
fi
