#!/bin/bash
# session 14 GPU call: gpu_test_ops (every group, convcache included) on the conv-cache change
# (choices written once per setup: ops_cuda_conv_cache_flush).
set -u
ROOT=$PWD
(cd .device && tar xJf pkg14.tar.xz)
P=$ROOT/.device/pkg
GPU=$P/bin/gpu_test_ops
export LD_LIBRARY_PATH="$P/lib:${LD_LIBRARY_PATH:-}"
source bench/device_env.sh
export LD_LIBRARY_PATH="$P/lib:$LD_LIBRARY_PATH"
mkdir -p "$OUT/cache"; export TASC_CACHE_DIR="$OUT/cache"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; git -C "$ROOT" log --oneline -1 2>/dev/null; } > "$OUT/gpu.txt"
timeout 500 "$GPU" > "$OUT/gpu_test_ops.log" 2>&1; echo "gpu_test_ops rc=$?" >> "$OUT/gpu.txt"
grep -E "convcache|passed|failed|FAIL" "$OUT/gpu_test_ops.log" | tail -8
cat "$OUT/gpu.txt"
