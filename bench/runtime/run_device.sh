#!/usr/bin/env bash
# run_device.sh OUT [full|quick]: the GPU half of issue 7 (runtime, CUDA ops, tasc bench), run on
# the GPU machine from the repository root.
# Binaries come from .device/rt/bin (built on the CPU machine for sm_90: `tasc` with `bench` in its
# command table, and gpu_test_ops), shared libraries the GPU machine may lack from .device/rt/lib;
# cuDNN and cuBLAS are the GPU machine's own (the CUDA toolkit's, else the PyTorch wheels').
# Steps: GPU tests; matmul tuning of the zoo's matmul shapes with their epilogues (skipped when
# bench/runtime/matmul_tune.txt exists: then that table is used); tasc bench on every zoo model
# against its optimized version (bench/runtime/opt/<model>.json when present, else optimized in
# memory by `tasc bench --optimize`: built-in rewrites, no rule file); the same without CUDA graphs
# for two models; a per-node profile of the models.
# Everything goes under OUT: env.txt test.log tune.log matmul_tune.txt bench.log bench.jsonl
# nograph.log profile.log
set -u
OUT=${1:?usage: bench/runtime/run_device.sh OUT [full|quick]}
MODE=${2:-full}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${TASC_DEVICE_BIN:-$ROOT/.device/rt/bin}
TMP=$(mktemp -d)
mkdir -p "$OUT"
export NVIDIA_TF32_OVERRIDE=0
export LD_LIBRARY_PATH="$ROOT/.device/rt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for lib in cudnn cublas; do
    if ldd "$BIN/tasc" | grep -q "lib$lib.*not found"; then
        d=$(python3 -c "import nvidia.$lib, os; print(os.path.join(list(nvidia.$lib.__path__)[0], 'lib'))" 2>/dev/null)
        [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    fi
    if ldd "$BIN/tasc" | grep -q "lib$lib.*not found"; then
        f=$(find / -xdev -name "lib$lib.so.*" -not -path "/proc/*" 2>/dev/null | head -1)
        [ -n "$f" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$f")"
    fi
done
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldd "$BIN/tasc" | grep -E "cudnn|cublas|cudart|not found"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if ldd "$BIN/tasc" "$BIN/gpu_test_ops" | grep -q "not found"; then
    echo "missing shared libraries (copy them into .device/rt/lib):"
    ldd "$BIN/tasc" "$BIN/gpu_test_ops" | grep "not found" | sort -u
    exit 1
fi

: > "$OUT/test.log"
for grp in conv matmul elementwise data constants pools runtime cost models; do
    echo "== gpu_test_ops $grp" | tee -a "$OUT/test.log"
    ( time timeout 150 "$BIN/gpu_test_ops" $grp ) >> "$OUT/test.log" 2>&1
    echo "gpu_test_ops $grp exit $?" | tee -a "$OUT/test.log"
done
grep -E "CHECK failed|rel L2|cases|model |passed|SKIPPED|differ|error|measured" "$OUT/test.log" | head -80

# matmul tuning table: the committed one, else tune the zoo's shapes now
TABLE="$OUT/matmul_tune.txt"
if [ -f "$ROOT/bench/runtime/matmul_tune.txt" ]; then
    cp "$ROOT/bench/runtime/matmul_tune.txt" "$TABLE"
    echo "using bench/runtime/matmul_tune.txt" > "$OUT/tune.log"
else
    cp "$ROOT/bench/matmul/matmul_tune.txt" "$TABLE"
    {
        time timeout 60 "$BIN/tasc" kernels tune --sizes 128x768x768,128x3072x768,128x768x3072,128x2304x768,1x1000x2048 \
            --epilogue bias --reps 5 --table "$TABLE"
        timeout 20 "$BIN/tasc" kernels tune --sizes 128x3072x768 --epilogue bias_gelu --reps 5 --table "$TABLE"
        timeout 20 "$BIN/tasc" kernels tune --sizes 1x512x512 --epilogue none --reps 5 --table "$TABLE"
    } > "$OUT/tune.log" 2>&1
    grep -E "best:|real" "$OUT/tune.log"
fi
export TASC_TUNE_TABLE="$TABLE"

MODELS="resnet50 resnext50 inception_v3 squeezenet bert nasnet_a nasrnn"
[ "$MODE" = quick ] && MODELS="resnet50 bert"
REPS=200
: > "$OUT/bench.log"
: > "$OUT/bench.jsonl"
for m in $MODELS; do
    "$BIN/tasc" model "$m" --out "$TMP/$m.json" || continue
    OPT="--optimize --time-limit 5"
    [ -f "$ROOT/bench/runtime/opt/$m.json" ] && OPT="$ROOT/bench/runtime/opt/$m.json"
    echo "== $m $OPT" | tee -a "$OUT/bench.log"
    ( time timeout 150 "$BIN/tasc" bench "$TMP/$m.json" $OPT --reps $REPS --json "$TMP/$m.out.json" ) >> "$OUT/bench.log" 2>&1
    echo "bench $m exit $?" | tee -a "$OUT/bench.log"
    [ -f "$TMP/$m.out.json" ] && { tr -d '\n' < "$TMP/$m.out.json"; echo; } >> "$OUT/bench.jsonl"
done
grep -E "^== |optimized in memory|latency median|speedup|vs CPU|exit|note:|device memory" "$OUT/bench.log"

echo "== without CUDA graphs" | tee "$OUT/nograph.log"
for m in resnet50 bert; do
    [ -f "$TMP/$m.json" ] || continue
    timeout 60 "$BIN/tasc" bench "$TMP/$m.json" --no-graph --no-cpu --reps 100 >> "$OUT/nograph.log" 2>&1
done
grep -E "latency median|runs:" "$OUT/nograph.log"

echo "== profile" | tee "$OUT/profile.log"
for m in resnet50 inception_v3 bert; do
    [ -f "$TMP/$m.json" ] || continue
    OPT="--optimize --time-limit 5"
    [ -f "$ROOT/bench/runtime/opt/$m.json" ] && OPT="$ROOT/bench/runtime/opt/$m.json"
    echo "== $m" >> "$OUT/profile.log"
    timeout 60 "$BIN/tasc" bench "$TMP/$m.json" $OPT --no-cpu --reps 20 --warmup 5 --profile --verbose \
        >> "$OUT/profile.log" 2>&1
done
grep -A12 "^profile" "$OUT/profile.log" | grep -E "profile|us  *[0-9.]*%" | head -60
rm -rf "$TMP"
