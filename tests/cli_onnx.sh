#!/bin/bash
# cli_onnx.sh TASC: `tasc import` / `tasc export` and .onnx models wherever a model is read.
# Checks exit codes, one-line messages, files written (JSON + sidecar, no temporaries, nothing on
# failure), that the imported JSON computes exactly what the .onnx computes, and export round trips.
# Run from the repository root (CTest does). The real models under ../shared are used when present.
set -u
TASC=${1:?usage: cli_onnx.sh TASC}
D=tests/data/onnx
M=../shared/models/onnx
T=$(mktemp -d /tmp/tasc-cli-onnx-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE CMD...: run, keep stdout in $T/out and stderr in $T/err, check the exit code
expect() {
    local want=$1
    shift
    "$@" >"$T/out" 2>"$T/err"
    local got=$?
    if [ "$got" -ne "$want" ]; then
        bad "exit $got (want $want): $* :: $(head -c 400 "$T/err")"
        return 1
    fi
    ok
    return 0
}
# err_is TEXT: stderr is exactly one line containing TEXT
err_has() {
    local n
    n=$(wc -l <"$T/err")
    if [ "$n" -ne 1 ] || ! grep -qF -- "$1" "$T/err"; then
        bad "stderr should be one line with '$1', got: $(cat "$T/err")"
    else
        ok
    fi
}

# --- help and command line ---------------------------------------------------------------------
expect 0 "$TASC" import --help && grep -q "weights.bin" "$T/out" && ok
expect 0 "$TASC" export --help && grep -q "opset 17" "$T/out" && ok
expect 2 "$TASC" import "$D/conv_ops.onnx" && err_has "usage: tasc import"
expect 2 "$TASC" import "$D/conv_ops.onnx" --out "$T/x.json" --bogus && err_has "unknown option '--bogus'"
expect 2 "$TASC" import "$D/all_ops.json" --out "$T/x.json" && err_has "not an .onnx file"
expect 2 "$TASC" import "$D/symbolic.onnx" --out "$T/x.json" --dim batch && err_has "bad value for --dim"
expect 2 "$TASC" export "$D/conv_ops.onnx" && err_has "usage: tasc export"

# --- errors: one line, exit 1, no output files ---------------------------------------------------
expect 1 "$TASC" import "$D/unsupported.onnx" --out "$T/u.json" &&
    err_has "tasc import: $D/unsupported.onnx: unsupported operators: NonMaxSuppression (x2, first 'nms_1'), Loop (x1, first 'loop'), com.microsoft.FusedMatMul (x1, first 'fused')"
expect 1 "$TASC" import "$D/data_bad_cubic.onnx" --out "$T/u.json" &&
    err_has "unsupported operators: Resize (x1, first 'rz': attribute mode = 'cubic' (supported: nearest, linear))"
expect 1 "$TASC" import "$D/data_bad_reflect.onnx" --out "$T/u.json" &&
    err_has "node 'pd' (Pad): reflect pads 5, 0 of dim 2 must be smaller than the dim (5)"
expect 1 "$TASC" import "$D/truncated.onnx" --out "$T/u.json" && err_has "not a valid ONNX model"
expect 1 "$TASC" import "$D/opset12.onnx" --out "$T/u.json" && err_has "opset 12"
expect 1 "$TASC" import "$D/ext_missing.onnx" --out "$T/u.json" &&
    err_has "initializer 'w': external data file '$D/missing.bin' is missing"
expect 1 "$TASC" run "$D/unsupported.onnx" && err_has "tasc run: $D/unsupported.onnx: unsupported operators:"
expect 1 "$TASC" info "$D/truncated.onnx" && err_has "tasc info: $D/truncated.onnx: not a valid ONNX model"
expect 1 "$TASC" import "$D/conv_ops.onnx" --out "$T/no/such/dir/c.json" && err_has "cannot create"
left=$(ls "$T" | grep -v -x -e out -e err)
if [ -n "$left" ]; then bad "files left after failed imports: $left"; else ok; fi

# --- import: JSON + sidecar, the same results as the .onnx itself ------------------------------
expect 0 "$TASC" import "$D/mlp_ops.onnx" --out "$T/mlp.json" && grep -q "mlp.weights.bin" "$T/out" && ok
[ -s "$T/mlp.json" ] && [ -s "$T/mlp.weights.bin" ] && ok || bad "mlp.json / mlp.weights.bin missing"
grep -q '"path": "mlp.weights.bin"' "$T/mlp.json" && ok || bad "JSON does not name its sidecar"
if ls "$T" | grep -q tmp; then bad "temporaries left: $(ls "$T")"; else ok; fi
expect 0 "$TASC" run "$T/mlp.json" --out-dir "$T/a"
expect 0 "$TASC" run "$D/mlp_ops.onnx" --out-dir "$T/b"
for f in "$T"/b/*.npy; do
    cmp -s "$f" "$T/a/$(basename "$f")" && ok || bad "imported JSON output $(basename "$f") differs from the .onnx run"
done
# the import is deterministic
expect 0 "$TASC" import "$D/mlp_ops.onnx" --out "$T/mlp2.json"
cmp -s "$T/mlp.weights.bin" "$T/mlp2.weights.bin" && ok || bad "sidecar not deterministic"
sed 's/mlp2\.weights/mlp.weights/' "$T/mlp2.json" | cmp -s - "$T/mlp.json" && ok || bad "JSON not deterministic"
# a model whose sidecar vanished gives a clear error
mv "$T/mlp.weights.bin" "$T/gone.bin"
expect 1 "$TASC" run "$T/mlp.json" && err_has "mlp.weights.bin"
mv "$T/gone.bin" "$T/mlp.weights.bin"

# the JSON never names a file of the importing process, and a saved model loads in another one
grep -q '/proc/' "$T/mlp.json" && bad "JSON names a /proc path" || ok
# external data next to the .onnx: imported into another folder, its values go to the sidecar
expect 0 "$TASC" import "$D/ext_data.onnx" --out "$T/ext.json" && grep -q "ext.weights.bin" "$T/out" && ok
grep -q '"path": "ext.weights.bin"' "$T/ext.json" && ok || bad "ext.json does not name its sidecar"
expect 0 "$TASC" run "$T/ext.json" --out-dir "$T/x1"
expect 0 "$TASC" run "$D/ext_data.onnx" --out-dir "$T/x2"
for f in "$T"/x2/*.npy; do
    cmp -s "$f" "$T/x1/$(basename "$f")" && ok || bad "ext.json output $(basename "$f") differs from the .onnx run"
done
# a failed import leaves an earlier JSON and sidecar as they were
cp "$T/mlp.json" "$T/keep.json"
cp "$T/mlp.weights.bin" "$T/keep.weights.bin"
expect 1 "$TASC" import "$D/truncated.onnx" --out "$T/mlp.json" && err_has "not a valid ONNX model"
cmp -s "$T/mlp.json" "$T/keep.json" && cmp -s "$T/mlp.weights.bin" "$T/keep.weights.bin" && ok ||
    bad "a failed import changed the earlier output"
rm -f "$T/keep.json" "$T/keep.weights.bin"

# symbolic dims and random weights through the shared model options
expect 0 "$TASC" import "$D/symbolic.onnx" --out "$T/sym.json" --dim batch=3 && grep -q '"shape": \[3, 4\]' "$T/sym.json" && ok
expect 0 "$TASC" import "$D/ext_missing.onnx" --out "$T/rw.json" --random-weights --weights-seed 5
expect 0 "$TASC" run "$T/rw.json" && grep -q "nan 0 inf 0" "$T/out" && ok || bad "random-weight model output not finite"
# values by role keep 40 residual blocks of order one; --weights-init legacy doubles the variance per block
rstd() { sed -n 's/^output .* std \([^ ]*\) .*/\1/p' "$T/out"; }
expect 0 "$TASC" run "$D/deep_residual.onnx" --random-weights && s1=$(rstd) &&
    awk -v s="$s1" 'BEGIN { exit !(s >= 0.1 && s <= 10) }' && ok || bad "deep_residual std '$s1' by role"
expect 0 "$TASC" run "$D/deep_residual.onnx" --random-weights --weights-init legacy && s2=$(rstd) &&
    awk -v s="$s2" 'BEGIN { exit !(s > 1000) }' && ok || bad "deep_residual std '$s2' legacy"
expect 2 "$TASC" run "$D/deep_residual.onnx" --random-weights --weights-init bogus && err_has "--weights-init"

# --- shape subgraphs folded at import (gen_shapes.py, gen_vit.py) --------------------------------
expect 0 "$TASC" info "$D/shapes/view.onnx" --dim N=2 && grep -q "^nodes: 2$" "$T/out" && ok ||
    bad "shapes/view.onnx should fold to 2 nodes: $(cat "$T/out")"
expect 1 "$TASC" info "$D/shapes/view.onnx" && err_has "graph input 'x' has the symbolic dimension 'N'"
expect 1 "$TASC" import "$D/shapes/err_mod_runtime.onnx" --dim N=2 --out "$T/u.json" &&
    err_has "unsupported operators: Mod (x1, first 'mod_rt': Mod of 'x', computed at run time"
expect 1 "$TASC" run "$D/shapes/err_overflow.onnx" --dim N=2 &&
    err_has "node 'big_mul' (Mul): the integer constant expression 2 * 4611686018427387904 overflows int64"
expect 1 "$TASC" info "$D/shapes/err_divzero.onnx" --dim N=2 &&
    err_has "node 'div0' (Div): the integer constant expression 2 / 0 divides by zero"
expect 1 "$TASC" info "$D/shapes/err_fold_limit.onnx" --dim N=2 && err_has "over the import folding limit"
expect 1 "$TASC" info "$D/shapes/err_shape_input.onnx" --dim N=2 &&
    err_has "Reshape (x1, first 'y': the shape must be a constant ('shape_in' is computed at run time))"
[ -e "$T/u.json" ] && bad "a refused import left u.json" || ok
# the tiny ViT: its JSON import computes exactly what the .onnx does
expect 1 "$TASC" info "$D/vit_tiny.onnx" && err_has "symbolic dimension 'batch'"
expect 0 "$TASC" import "$D/vit_tiny.onnx" --dim batch=2 --out "$T/vit.json"
expect 0 "$TASC" info "$T/vit.json" && grep -q "layernorm *5" "$T/out" && ok || bad "vit.json: $(cat "$T/out")"
expect 0 "$TASC" run "$T/vit.json" --input "x=$D/vit_tiny.in.x.npy" --out-dir "$T/v1"
expect 0 "$TASC" run "$D/vit_tiny.onnx" --dim batch=2 --input "x=$D/vit_tiny.in.x.npy" --out-dir "$T/v2"
cmp -s "$T/v1/y.npy" "$T/v2/y.npy" && ok || bad "vit_tiny JSON and .onnx runs differ"
# the tiny Swin transformer (gen_swin.py) likewise; malformed ScatterND is one line naming the node
expect 0 "$TASC" import "$D/swin_tiny.onnx" --dim batch=2 --out "$T/swin.json"
expect 0 "$TASC" run "$T/swin.json" --input "x=$D/swin_tiny.in.x.npy" --out-dir "$T/s1"
expect 0 "$TASC" run "$D/swin_tiny.onnx" --dim batch=2 --input "x=$D/swin_tiny.in.x.npy" --out-dir "$T/s2"
cmp -s "$T/s1/y.npy" "$T/s2/y.npy" && ok || bad "swin_tiny JSON and .onnx runs differ"
expect 1 "$TASC" info "$D/scatter/err_scatter_range.onnx" --dim N=2 &&
    err_has "node 'bad' (ScatterND): index 4 (update 1, axis 0) is out of range for a dimension of 4"
expect 1 "$TASC" run "$D/scatter/err_scatter_updates.onnx" --dim N=2 &&
    err_has "node 'bad' (ScatterND): updates of shape (3) do not fit data (4,6) and indices (2,2)"

# --- export: a file that imports again and computes the same --------------------------------------
expect 0 "$TASC" export "$D/all_ops.json" --out "$T/all.onnx"
[ -s "$T/all.onnx" ] && ok || bad "export wrote nothing"
expect 0 "$TASC" run "$D/all_ops.json" --out-dir "$T/c"
expect 0 "$TASC" run "$T/all.onnx" --out-dir "$T/d"
n=0
for f in "$T"/c/*.npy; do
    n=$((n + 1))
    [ -f "$T/d/$(basename "$f")" ] && ok || bad "exported model lacks output $(basename "$f")"
done
[ "$n" -eq 16 ] && ok || bad "all_ops.json should have 16 outputs, ran $n"
expect 0 "$TASC" export "$T/mlp.json" --out "$T/mlp.onnx"
expect 0 "$TASC" run "$T/mlp.onnx" --out-dir "$T/e"
for f in "$T"/a/*.npy; do
    cmp -s "$f" "$T/e/$(basename "$f")" && ok || bad "re-exported mlp output $(basename "$f") differs"
done
expect 1 "$TASC" export "$D/unsupported.onnx" --out "$T/never.onnx" && err_has "unsupported operators"
[ -e "$T/never.onnx" ] && bad "failed export left a file" || ok

# --- the real models, when present -------------------------------------------------------------------
if [ -f "$M/squeezenet1_1.onnx" ]; then
    expect 0 "$TASC" info "$M/squeezenet1_1.onnx" && grep -q "conv2d *26" "$T/out" && ok
    expect 0 "$TASC" import "$M/squeezenet1_1.onnx" --out "$T/sq.json"
    expect 0 "$TASC" run "$T/sq.json" --input "input=$M/squeezenet1_1.in.input.npy" --out-dir "$T/sq"
    expect 0 "$TASC" run "$M/squeezenet1_1.onnx" --input "input=$M/squeezenet1_1.in.input.npy" --out-dir "$T/sq2"
    cmp -s "$T/sq/117.npy" "$T/sq2/117.npy" && ok || bad "squeezenet JSON and .onnx runs differ"
    expect 1 "$TASC" import "$M/resnet50.graph.onnx" --out "$T/r.json" && err_has "resnet50.weights.bin' is missing"
    expect 0 "$TASC" import "$M/resnet50.graph.onnx" --out "$T/r.json" --random-weights
else
    echo "note: $M absent, real-model checks skipped"
fi

echo "cli_onnx: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
