#!/usr/bin/env bash
# ab_device.sh OUT A B: on the GPU machine, from the repository root -- two builds of tasc compared
# on the zoo in one call. A and B are folders, each with bin/tasc (a CUDA build), rules.json (the
# rule set that build shipped) and, optionally, env.sh (sourced before the build runs: the
# variables that build reads, such as its matmul tuning table). For each zoo model and each build:
# `tasc model`, `tasc optimize` (defaults, the build's rules) and `tasc bench ORIGINAL OPTIMIZED`
# (median of 200 CUDA-graph replays, alternating the two graphs), twice, in the order A B B A so
# that a drift of the GPU over the call falls on both builds alike. Each build's original and
# optimized graphs run on that build's own runtime, as its users would run them.
# TASC_ZOO_MODELS: the models (default all seven). Writes OUT/env.txt, OUT/A.log, OUT/B.log and
# OUT/ab.md (one row per model: both builds' latencies and speedups, each round).
set -u
OUT=${1:?usage: bench/optimize/ab_device.sh OUT A B}
A=$(cd "${2:?usage: bench/optimize/ab_device.sh OUT A B}" && pwd) || exit 2
B=$(cd "${3:?usage: bench/optimize/ab_device.sh OUT A B}" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=$B/bin/tasc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS)
device_prelude "$OUT"          # OUT/cache, .device/lib, OUT/env.txt
for s in A B; do
    d=${!s}
    { echo "== $s: $d"; "$d/bin/tasc" --version; ldd "$d/bin/tasc" | grep -E "not found|cudnn|cublas|z3"; } >>"$OUT/env.txt" 2>&1
    if ldd "$d/bin/tasc" | grep -q "not found"; then
        echo "$s: missing shared libraries (OUT/env.txt)"
        exit 1
    fi
    : >"$OUT/$s.log"
done

# side S MODEL: optimize MODEL with build S once (TMP/S.MODEL.opt.json)
side_optimize() {
    local s=$1 m=$2 d=${!1}
    (
        [ -f "$d/env.sh" ] && . "$d/env.sh"
        "$d/bin/tasc" model "$m" --out "$TMP/$s.$m.json" &&
            "$d/bin/tasc" optimize "$TMP/$s.$m.json" --rules "$d/rules.json" --out "$TMP/$s.$m.opt.json" --no-check
    ) >>"$OUT/$s.log" 2>&1
}

# side_bench S MODEL: one paired bench; prints "original optimized speedup" or "? ? ?"
side_bench() {
    local s=$1 m=$2 d=${!1}
    rm -f "$TMP/r.json"
    (
        [ -f "$d/env.sh" ] && . "$d/env.sh"
        echo "== $m bench"
        timeout 150 "$d/bin/tasc" bench "$TMP/$s.$m.json" "$TMP/$s.$m.opt.json" --reps 200 --json "$TMP/r.json"
        echo "exit $?"
    ) >>"$OUT/$s.log" 2>&1
    local ms sp
    ms=$(tr -d '\n' 2>/dev/null <"$TMP/r.json" | grep -o '"median_ms": *[0-9.]*' | sed 's/.*: *//' | tr '\n' ' ')
    sp=$(tr -d '\n' 2>/dev/null <"$TMP/r.json" | sed -n 's/.*"speedup": *\([0-9.]*\).*/\1/p')
    set -- $ms
    echo "${1:-?} ${2:-?} ${sp:-?}"
}

{
    echo "| model | A original ms | A optimized ms | A speedup | B original ms | B optimized ms | B speedup | B optimized / A optimized |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} >"$OUT/ab.md"
for m in ${TASC_ZOO_MODELS-resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet}; do
    side_optimize A "$m" || echo "A: $m failed to optimize" >>"$OUT/A.log"
    side_optimize B "$m" || echo "B: $m failed to optimize" >>"$OUT/B.log"
    read -r a1o a1p a1s <<<"$(side_bench A "$m")"
    read -r b1o b1p b1s <<<"$(side_bench B "$m")"
    read -r b2o b2p b2s <<<"$(side_bench B "$m")"
    read -r a2o a2p a2s <<<"$(side_bench A "$m")"
    ratio=$(awk -v a="$a1p" -v b="$b1p" -v c="$a2p" -v d="$b2p" \
        'BEGIN { if (a + 0 > 0 && c + 0 > 0) printf "%.3f / %.3f", b / a, d / c; else print "?" }')
    echo "| $m | $a1o / $a2o | $a1p / $a2p | $a1s / $a2s | $b1o / $b2o | $b1p / $b2p | $b1s / $b2s | $ratio |" |
        tee -a "$OUT/ab.md"
done
