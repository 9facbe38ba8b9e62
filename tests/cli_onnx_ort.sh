#!/bin/bash
# cli_onnx_ort.sh TASC: conformance with onnxruntime through tests/onnx_ort_check.py:
#   - import: onnxruntime on each crafted model and on the real models gives what `tasc run` gives,
#     and the real models match their reference outputs (relative L2 error <= 1e-4); so do the
#     shape-subgraph models (tests/data/onnx/shapes) and the tiny ViTs of both torch exporters
#     (tests/data/onnx/vit_tiny*.onnx, also against torch's output), with --dim; so do the
#     ScatterND and strided-slice models (tests/data/onnx/scatter) and the tiny Swin transformer
#     (tests/data/onnx/swin_tiny.onnx, also against torch's output);
#   - sidecar: the same through `tasc import` (JSON + weights file);
#   - export: `tasc export` output passes onnx.checker and onnxruntime agrees with `tasc run`, for
#     every operator of the table (all_ops.json), the crafted and real models, and resnet50 with
#     random weights.
# onnx / onnxruntime / numpy come from PyPI when missing (see onnx_ort_check.py); exit 77 (skipped)
# when that is impossible.
set -u
TASC=${1:?usage: cli_onnx_ort.sh TASC}
D=tests/data/onnx
M=../shared/models/onnx
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "SKIPPED: no $PY"
    exit 77
fi
T=$(mktemp -d /tmp/tasc-cli-ort-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() {
    local out rc
    out=$("$PY" tests/onnx_ort_check.py "$TASC" "$@" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/  /'
    if [ $rc -eq 77 ]; then
        echo "$out" | grep SKIPPED | head -1
        exit 77
    fi
    if [ $rc -ne 0 ]; then
        echo "FAIL: onnx_ort_check.py $*"
        fails=$((fails + 1))
    fi
}

for m in conv_ops mlp_ops typed ext_data reduce_ops opset18 hardsigmoid act_patterns norm_ops data_ops data_ops18 \
    pad_relu; do
    echo "== $m"
    check import "$D/$m.onnx"
    check sidecar "$D/$m.onnx"
    check export "$D/$m.onnx"
done
echo "== all_ops.json"
check export "$D/all_ops.json"
# shape subgraphs as torch exports them, folded at import (gen_shapes.py), batch N = 2
for m in view unflatten expand range slice causal; do
    echo "== shapes/$m"
    for mode in import sidecar export; do
        check $mode "$D/shapes/$m.onnx" --dim N=2
    done
done
# a tiny torchvision ViT from both torch exporters (gen_vit.py), also against torch's output
VIT=(--dim batch=2 --input "x=$D/vit_tiny.in.x.npy" --ref "y=$D/vit_tiny.out.y.npy")
for m in vit_tiny vit_tiny_dynamo; do
    for mode in import sidecar export; do
        echo "== $m ($mode)"
        check $mode "$D/$m.onnx" "${VIT[@]}"
    done
done
# ScatterND folded at import and Slice steps at run time (gen_scatter.py), batch N = 2
for m in scatter slice_step; do
    echo "== scatter/$m"
    for mode in import sidecar export; do
        check $mode "$D/scatter/$m.onnx" --dim N=2
    done
done
# a tiny torchvision Swin transformer (gen_swin.py), also against torch's output
SWIN=(--dim batch=2 --input "x=$D/swin_tiny.in.x.npy" --ref "y=$D/swin_tiny.out.y.npy")
for mode in import sidecar export; do
    echo "== swin_tiny ($mode)"
    check $mode "$D/swin_tiny.onnx" "${SWIN[@]}"
done

if [ -f "$M/squeezenet1_1.onnx" ]; then
    SQ=(--input "input=$M/squeezenet1_1.in.input.npy" --ref "117=$M/squeezenet1_1.out.117.npy")
    BM=(--input "input_ids=$M/bert_mini.in.input_ids.npy" --ref "layer_norm_4=$M/bert_mini.out.layer_norm_4.npy")
    for mode in import sidecar export; do
        echo "== squeezenet1_1 ($mode)"
        check $mode "$M/squeezenet1_1.onnx" "${SQ[@]}"
        echo "== bert_mini ($mode)"
        check $mode "$M/bert_mini.onnx" "${BM[@]}"
    done
    echo "== resnet50 with random weights (export)"
    if "$TASC" import "$M/resnet50.graph.onnx" --random-weights --out "$T/r50.json" >/dev/null; then
        check export "$T/r50.json"
    else
        echo "FAIL: tasc import resnet50.graph.onnx --random-weights"
        fails=$((fails + 1))
    fi
else
    echo "note: $M absent, real-model checks skipped"
fi
echo "cli_onnx_ort: $fails failed"
[ "$fails" -eq 0 ]
