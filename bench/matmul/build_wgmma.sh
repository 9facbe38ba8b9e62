#!/usr/bin/env bash
# Builds the standalone wgmma 3xTF32 probe (bench/matmul/wgmma_3xtf32.cu) for Hopper (sm_90a: wgmma
# and setmaxnreg need the arch-specific target). Usage: bash bench/matmul/build_wgmma.sh [OUT_BINARY]
# `bash bench/matmul/build_wgmma.sh presplit [OUT_BINARY]` builds the pre-split timing harness
# (bench/matmul/presplit_3xtf32.cu: the library's 3xTF32 files included whole) instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = presplit ]; then
    out=${2:-$here/../../.device/presplit/presplit_3xtf32}
    mkdir -p "$(dirname "$out")"
    nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -I"$here/../../ops/cuda" \
        -I"$here/../../src/base" -o "$out" "$here/presplit_3xtf32.cu" -lcublas
    test -x "$out"
    echo "built $out"
    exit 0
fi
out=${1:-$here/../../.device/wgmma/wgmma_3xtf32}
mkdir -p "$(dirname "$out")"
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -Xptxas -v \
    -o "$out" "$here/wgmma_3xtf32.cu" -lcublas 2>&1 | grep -v '^ptxas info    : Function properties' || true
test -x "$out"
echo "built $out"
