#!/usr/bin/env bash
# run_modes_device.sh OUT: on the GPU machine, from the repository root -- issue 15's three
# optimizer modes on every zoo model, optimized on the machine's CPU and timed in one call on its
# GPU: built-ins only (`--rules none`), rules only (`--builtins minimal`, rules/verified-4.json) and
# the default (`--builtins all`, rules/verified-4.json), and equality saturation (`--search eqsat`,
# rules/verified-4.json). For each: the predicted speedup and the
# search time printed by `tasc optimize`, and `tasc bench ORIGINAL OPTIMIZED` (median of 200 CUDA
# graph replays, alternating the two graphs). Binary: .device/new/bin/tasc, libraries .device/lib.
# Then the same for every ONNX model in TASC_ONNX_DIR (default ../shared/models/onnx; on the GPU
# machine, which has no ../shared, a carried copy such as .device/onnx), imported with
# `tasc import --random-weights` (seeded weights where a .graph.onnx ships none).
# TASC_ZOO_MODELS: the zoo models to run (default all seven; empty: none, the ONNX models only).
# Writes OUT/env.txt, OUT/optimize.log, OUT/bench.log and OUT/modes.md (one row per model).
set -u
OUT=${1:?usage: bench/optimize/run_modes_device.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=$ROOT/.device/new/bin/tasc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS), TASC_TUNE_TABLE
device_prelude "$OUT"          # OUT/cache, .device/lib, OUT/env.txt
RULES=$ROOT/rules/verified-4.json
: >"$OUT/optimize.log"
: >"$OUT/bench.log"
{
    echo "| model | mode | predicted | search s | original ms | optimized ms | measured |"
    echo "|---|---|---:|---:|---:|---:|---:|"
} >"$OUT/modes.md"
ONNX_DIR=${TASC_ONNX_DIR:-$ROOT/../shared/models/onnx}
MODELS=${TASC_ZOO_MODELS-resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet}
[ -d "$ONNX_DIR" ] && MODELS="$MODELS $(cd "$ONNX_DIR" && ls *.onnx)"
for m in $MODELS; do
    case $m in
    *.onnx) "$GPU" import "$ONNX_DIR/$m" --random-weights --out "$TMP/$m.json" >>"$OUT/optimize.log" 2>&1 || continue ;;
    *) "$GPU" model "$m" --out "$TMP/$m.json" || continue ;;
    esac
    for mode in ${TASC_MODES:-none minimal default eqsat}; do
        case $mode in
        none) args=(--rules none) ;;
        minimal) args=(--rules "$RULES" --builtins minimal) ;;
        default) args=(--rules "$RULES") ;;
        eqsat) args=(--rules "$RULES" --search eqsat) ;;
        esac
        echo "== $m $mode" >>"$OUT/optimize.log"
        "$GPU" optimize "$TMP/$m.json" "${args[@]}" --out "$TMP/$m.$mode.json" --no-check >"$TMP/o.txt" 2>&1
        cat "$TMP/o.txt" >>"$OUT/optimize.log"
        pred=$(sed -n 's/.*predicted speedup \([0-9.]*\)x.*/\1/p' "$TMP/o.txt" | head -1)
        secs=$(sed -n 's/.*search[^0-9]*\([0-9.]*\) s.*/\1/p' "$TMP/o.txt" | head -1)
        echo "== $m $mode" >>"$OUT/bench.log"
        timeout 120 "$GPU" bench "$TMP/$m.json" "$TMP/$m.$mode.json" --reps 200 --json "$TMP/r.json" \
            >>"$OUT/bench.log" 2>&1
        ms=$(tr -d '\n' <"$TMP/r.json" 2>/dev/null | grep -o '"median_ms": *[0-9.]*' | sed 's/.*: *//' | tr '\n' ' ')
        meas=$(tr -d '\n' <"$TMP/r.json" 2>/dev/null | sed -n 's/.*"speedup": *\([0-9.]*\).*/\1/p')
        set -- $ms
        echo "| $m | $mode | ${pred:-?}x | ${secs:-?} | ${1:-?} | ${2:-?} | ${meas:-?}x |" | tee -a "$OUT/modes.md"
        rm -f "$TMP/r.json"
    done
done
