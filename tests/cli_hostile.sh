#!/usr/bin/env bash
# cli_hostile.sh TASC: hostile and odd inputs through the CLI (issue 18), each class with its exit
# code from the README's table and one line on stderr naming the file: ONNX models nesting 3,000
# levels deep, a 20,000-node chain through optimize, Reshape and Split sizes that overflow int64,
# integer codes for names in JSON, weight files and external data outside the model's folder
# ("..", absolute, symbolic links; --allow-outside-paths), models optimize used to refuse (an
# initializer as the output, Pow(x, 0.5), a Clip without min), a numerical check that NaN makes
# fail only where the original is finite, an unreadable weight file in optimize (exit 1, the
# model named), external data that is a directory, a negative input dim, negative gather ids.
# The ONNX models come from tests/hostile_onnx.py. Prints "cli_hostile: N failed".
set -u
TASC=${1:?usage: cli_hostile.sh TASC}
cd "$(dirname "$0")/.." || exit 1
fail=0
tmp=$(mktemp -d /tmp/tasc_cli_hostile.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib_cli.sh # expect CODE PATTERN ARGS...

python3 tests/hostile_onnx.py "$tmp/onnx" || { echo "FAIL: tests/hostile_onnx.py"; exit 1; }
O=$tmp/onnx

# --- crashes --------------------------------------------------------------------------------
# out CMD: the output option CMD needs (optimize), for the loops below
out() { [ "$1" = optimize ] && echo "--out=$tmp/o.json"; }
for c in info run optimize; do
    expect 1 "tasc $c: $O/deep_graph.onnx: messages nest deeper than 64 levels" $c "$O/deep_graph.onnx" $(out $c)
done
expect 1 "deep_type.onnx: messages nest deeper than 64 levels" info "$O/deep_type.onnx"
awk 'BEGIN { n = 20000
  printf "{\"format\": \"tasc-model\", \"version\": 1, \"inputs\": [{\"name\": \"x\", \"shape\": [1, 8]}],\n \"nodes\": [\n"
  for (i = 0; i < n; i++) printf "  {\"name\": \"r%d\", \"op\": \"relu\", \"inputs\": [\"%s\"]}%s\n", i, i ? "r" (i - 1) : "x", i < n - 1 ? "," : ""
  printf " ],\n \"outputs\": [\"r%d\"]}\n", n - 1 }' > "$tmp/chain.json"
expect 0 "" optimize "$tmp/chain.json" --rules none --budget 4 --out "$tmp/chain_opt.json" --quiet
expect 1 "reshape_big.onnx: node 'Reshape' (Reshape): the product of the shape's entries overflows int64" \
    run "$O/reshape_big.onnx"
# --- silent acceptance ------------------------------------------------------------------------
expect 1 "split_wrap.onnx: node 'Split' (Split): the split sizes overflow int64 when summed" run "$O/split_wrap.onnx"
sed 's/"act": "relu"/"act": 3/' tests/data/cli/small.json > "$tmp/act_int.json"
grep -q '"act": 3' "$tmp/act_int.json" || { echo "FAIL: tests/data/cli/small.json has no \"act\": \"relu\""; fail=1; }
expect 1 "act_int.json: node '.*': parameter 'act' must be a name, got an integer (one of: none, relu" \
    info "$tmp/act_int.json"

# --- files outside the model's folder --------------------------------------------------------------
mkdir -p "$tmp/m"
printf '\0\0\200\77\0\0\0\100\0\0\100\100\0\0\200\100' > "$tmp/outside.bin" # 1 2 3 4 as float32
cp "$tmp/outside.bin" "$tmp/m/inside.bin"
ln -s "$tmp/outside.bin" "$tmp/m/link.bin"
ln -s /etc/passwd "$tmp/m/passwd.bin"
model_with() { # model_with FILE PATH: a JSON model whose weight w is read from PATH
    printf '{"format": "tasc-model", "version": 1, "inputs": [{"name": "x", "shape": [4]}],
 "weights": [{"name": "w", "shape": [4], "init": {"kind": "file", "path": "%s"}}],
 "nodes": [{"name": "a", "op": "ewadd", "inputs": ["x", "w"]}], "outputs": ["a"]}\n' "$2" > "$1"
}
model_with "$tmp/m/in.json" inside.bin
expect 0 "" run "$tmp/m/in.json" --out-dir "$tmp/o_in"
i=0
for p in ../outside.bin "$tmp/outside.bin" link.bin passwd.bin ../../../../../../../../etc/passwd; do
    i=$((i + 1))
    model_with "$tmp/m/out$i.json" "$p"
    for c in info run optimize; do
        expect 1 "tasc $c: $tmp/m/out$i.json: weight 'w': file '$p' resolves to .*, outside the model's folder" \
            $c "$tmp/m/out$i.json" $(out $c)
    done
    [ -e "$tmp/o.json" ] && { echo "FAIL: optimize wrote $tmp/o.json for out$i.json"; fail=1; }
done
expect 0 "" run "$tmp/m/out1.json" --allow-outside-paths --out-dir "$tmp/o_allowed"
expect 0 "" optimize "$tmp/m/out3.json" --allow-outside-paths --rules none --out "$tmp/o_allowed.json" --quiet
# ONNX external data: inside, a link out, a directory
cp "$O/ext.onnx" "$tmp/m/ext.onnx"
cp "$tmp/outside.bin" "$tmp/m/w.bin"
expect 0 "" run "$tmp/m/ext.onnx" --out-dir "$tmp/o_ext"
rm "$tmp/m/w.bin" && ln -s /etc/passwd "$tmp/m/w.bin"
expect 1 "ext.onnx: initializer 'w': external data file 'w.bin' resolves to '/etc/passwd', outside the model's folder" \
    info "$tmp/m/ext.onnx"
rm "$tmp/m/w.bin" && ln -s "$tmp/outside.bin" "$tmp/m/w.bin"
expect 0 "" info "$tmp/m/ext.onnx" --allow-outside-paths
rm "$tmp/m/w.bin" && mkdir "$tmp/m/w.bin"
expect 1 "ext.onnx: initializer 'w': external data file '.*w.bin' is a directory" info "$tmp/m/ext.onnx"
model_with "$tmp/m/dirw.json" w.bin
expect 1 "tasc run: $tmp/m/dirw.json: weight 'w': file '.*w.bin': is a directory" run "$tmp/m/dirw.json"

# --- valid models optimize refused --------------------------------------------------------------
expect 0 "" optimize "$O/init_out.onnx" --rules none --out "$tmp/init_out.json" --quiet
expect 0 "" run "$tmp/init_out.json" --out-dir "$tmp/o_init"
expect 0 "" optimize "$O/pow_half.onnx" --out "$tmp/pow_half.json" --quiet --time-limit 2
grep -q "^check: passed" "$tmp/out" || { echo "FAIL: Pow(x, 0.5) did not pass the check: $(cat "$tmp/out")"; fail=1; }
expect 0 "" optimize "$O/clip_max.onnx" --rules none --out "$tmp/clip.json" --quiet
grep -q '"lo": "-inf", "hi": 0.5' "$tmp/clip.json" || { echo "FAIL: the clip bounds were not saved: $(grep clip "$tmp/clip.json")"; fail=1; }
expect 0 "" export "$tmp/clip.json" --out "$tmp/clip.onnx"
expect 0 "" import "$tmp/clip.onnx" --out "$tmp/clip_back.json"
grep -q '"lo": "-inf", "hi": 0.5' "$tmp/clip_back.json" || { echo "FAIL: the clip bounds did not round-trip"; fail=1; }
# NaN where the original is finite still fails the check: a false rule sqrt(relu(x)) = sqrt(x)
cat > "$tmp/nan_rule.json" <<'EOF'
{"format": "tasc-rules", "version": 1, "generator": "hand-written for tests: a FALSE rule", "tool": "tasc 0.1.0",
 "rules": [
  {"id":"wrong_sqrt_relu","vars":[{"name":"x0","shape":[2,8]}],"src":[{"op":"relu","inputs":["x0"]},{"op":"sqrt","inputs":["%0"]}],"dst":[{"op":"sqrt","inputs":["x0"]}],"outputs":[{"src":"%1","dst":"%0"}]}
 ]}
EOF
printf '{"format": "tasc-model", "version": 1, "inputs": [{"name": "x", "shape": [2, 8]}],
 "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}, {"name": "y", "op": "sqrt", "inputs": ["r"]}], "outputs": ["y"]}\n' \
    > "$tmp/sqrt_relu.json"
expect 1 "numerical check failed: $tmp/sqrt_relu.json: output 'y': [0-9]* values are NaN/Inf in one model and finite in the other" \
    optimize "$tmp/sqrt_relu.json" --rules "$tmp/nan_rule.json" --out "$tmp/nan_opt.json" --quiet
[ -e "$tmp/nan_opt.json" ] && { echo "FAIL: written despite NaN where the original is finite"; fail=1; }

# --- exit codes and messages --------------------------------------------------------------------
expect 1 "tasc optimize: tests/data/cli/missing_data.json: weight 'wdata': file '.*no_such_weights.bin': No such file" \
    optimize tests/data/cli/missing_data.json --rules none --out "$tmp/md.json" --quiet
expect 1 "neg_dim.onnx: graph input 'x': dimension 1 is -3 (dims must be positive)" info "$O/neg_dim.onnx"
python3 -c "
import struct, sys
h = b\"{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }\"
h += b' ' * (118 - len(h)) + b'\n'
open(sys.argv[1], 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h + struct.pack('<4q', 0, -1, 2, 3))
" "$tmp/ids_neg.npy"
expect 1 "tasc run: .*node 'emb': id -1 at element 1 of 'ids' is not an integer in \[0, 5)" \
    run tests/data/cli/gather.json --input ids="$tmp/ids_neg.npy" --out-dir "$tmp/o_ids"

echo "cli_hostile: $fail failed"
[ $fail -eq 0 ]
