#!/usr/bin/env bash
# bench/runtime/autotune_check.sh OUT: on the GPU machine, from the repository root -- is a
# `tasc bench` run that tuned on first use as fast as later runs, and as a run with an exhaustively
# tuned table? Binaries as autotune_device.sh (AT_PKG), or unpacked in AT_DIR (bin/, lib/). No
# shipped or user tables.
#  1. `tasc kernels tune` (exhaustive) of bert's five matmul problems -> the complete table
#  2. bert with an empty cache (first use: tunes), then without a gap: the filled cache, the
#     complete table (as the user table, an empty cache), alternating, three rounds
#  3. the filled cache right after 5 s of GPU load (`tasc kernels bench` of 8192), twice: does a
#     run that follows heavy GPU work (as the first use's tuning is) lose speed?
# Writes OUT/check.log (the latency lines) and OUT/*.log.
set -u
OUT=${1:?usage: bench/runtime/autotune_check.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${AT_PKG:-$ROOT/.device-at/pkg.tar.xz}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT" "$W/pkg" "$W/empty"
if [ -n "${AT_DIR:-}" ]; then # an unpacked package: AT_DIR/bin/tasc, AT_DIR/lib
    ln -sfn "$AT_DIR/bin" "$W/pkg/bin"
    ln -sfn "$AT_DIR/lib" "$W/pkg/lib"
else
    tar xJf "$PKG" -C "$W/pkg"
fi
GPU=$W/pkg/bin/tasc
. "$ROOT/bench/device_env.sh"
export LD_LIBRARY_PATH="$W/pkg/lib:$LD_LIBRARY_PATH"
export TASC_TUNE_DIR=$W/empty TASC_TUNE_TABLE=$W/no-user-table.txt
unset TASC_NO_AUTOTUNE
B="bench models/bert.json --no-cpu"
lat() { echo "$1: $(grep "latency median" "$OUT/$1.log" | awk '{print $4}') ms $(grep -h "tasc: tuned [0-9]" "$OUT/$1.log")"; }
"$GPU" kernels tune --sizes 128x768x768,128x3072x768,128x768x3072 --epilogue bias --table "$W/complete.txt" >"$OUT/tune.log" 2>&1
"$GPU" kernels tune --sizes 128x128x64x12,128x64x128x12 --epilogue none --table "$W/complete.txt" >>"$OUT/tune.log" 2>&1
cp "$W/complete.txt" "$OUT/complete.txt"
sleep 5
TASC_CACHE_DIR=$W/cache "$GPU" $B >"$OUT/first.log" 2>&1
lat first
for r in 1 2 3; do
    TASC_CACHE_DIR=$W/cache "$GPU" $B >"$OUT/cached-$r.log" 2>&1
    lat cached-$r
    TASC_CACHE_DIR=$W/cache-empty TASC_TUNE_TABLE=$W/complete.txt "$GPU" $B >"$OUT/complete-$r.log" 2>&1
    lat complete-$r
done
for r in 1 2; do
    "$GPU" kernels bench --sizes 8192 --versions tuned --fused none --reps 150 --table "$W/empty/none.txt" >/dev/null 2>&1
    TASC_CACHE_DIR=$W/cache "$GPU" $B >"$OUT/after-load-$r.log" 2>&1
    lat after-load-$r
    sleep 3
    TASC_CACHE_DIR=$W/cache "$GPU" $B >"$OUT/after-rest-$r.log" 2>&1
    lat after-rest-$r
done
