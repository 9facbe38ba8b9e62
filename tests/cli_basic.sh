#!/usr/bin/env bash
# cli_basic.sh TASC: the happy paths of `tasc info|run|dot|ops|model`, asserting real values:
# the op counts, FLOPs and parameters of the fixture tests/data/cli/small.json (derived by hand
# below), run checksums equal across thread counts, .npy outputs written and fed back through
# --input, deterministic model JSON. Prints "N passed, N failed"; exits 1 on any failure.
set -u
TASC=${1:?usage: cli_basic.sh TASC_BINARY}
cd "$(dirname "$0")/.." || exit 1
D=tests/data/cli
SMALL=$D/small.json
TMP=$(mktemp -d /tmp/tasc_cli_basic.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then ok; else bad "$what"; fi
}
has() { grep -qE -- "$2" "$1"; }            # has FILE REGEX
line() { grep -E -- "$2" "$1" | head -1; }  # the first line of FILE matching REGEX

# --- info ----------------------------------------------------------------------------------
# small.json: x (1,3,8,8) -> conv1 3x3 same +bias relu (4 filters) -> conv2 1x1 -> ewadd with
# conv1 -> relu -> globalavgpool -> reshape (1,4) -> matmul (4,5) + bias.
# FLOPs: conv1 2*256*27 + 256 (bias) + 256 (relu) = 14336; conv2 2*256*4 = 2048; ewadd 256;
# relu 256; globalavgpool 256; matmul 2*5*4 + 5 = 45; total 17197.
# Multiply-adds: 256*27 + 256*4 + 5*4 = 7956. Parameters 108 + 4 + 16 + 20 + 5 = 153.
# Activation bytes: 4 * (256 * 4 + 4 + 4 + 5) = 4148.
"$TASC" info $SMALL > "$TMP/info.txt" 2> "$TMP/info.err"
check "info exits 0" test $? -eq 0
check "info: nothing on stderr" test ! -s "$TMP/info.err"
check "info: model name" has "$TMP/info.txt" '^model: small '
check "info: input x shape" has "$TMP/info.txt" '^  x +float32 +\(1,3,8,8\)$'
check "info: output fc/out shape" has "$TMP/info.txt" '^  fc/out +float32 +\(1,5\)$'
check "info: 7 nodes" has "$TMP/info.txt" '^nodes: 7$'
check "info: conv2d 2" has "$TMP/info.txt" '^  conv2d +2$'
check "info: matmul 1" has "$TMP/info.txt" '^  matmul +1$'
check "info: ewadd 1" has "$TMP/info.txt" '^  ewadd +1$'
check "info: relu 1" has "$TMP/info.txt" '^  relu +1$'
check "info: globalavgpool 1" has "$TMP/info.txt" '^  globalavgpool +1$'
check "info: reshape 1" has "$TMP/info.txt" '^  reshape +1$'
# op-table order: conv2d before matmul before ewadd before relu before globalavgpool before reshape
order=$(sed -n '/^ops:/,/^flops/p' "$TMP/info.txt" | awk 'NR>1 && $1 != "flops:" {printf "%s ", $1}')
check "info: ops in table order ($order)" test "$order" = "conv2d matmul ewadd relu globalavgpool reshape "
check "info: flops 17197" has "$TMP/info.txt" '^flops: 17197 '
check "info: multiply-adds 7956" has "$TMP/info.txt" '^multiply-adds \(conv2d, matmul\): 7956 '
check "info: params 153" has "$TMP/info.txt" '^params: 153$'
check "info: param bytes 612" has "$TMP/info.txt" '^param bytes: 612 '
check "info: activation bytes 4148" has "$TMP/info.txt" '^activation bytes: 4148 '

"$TASC" info --json $SMALL > "$TMP/info.json"
check "info --json exits 0" test $? -eq 0
if command -v jq > /dev/null; then
    check "json: nodes" test "$(jq .nodes "$TMP/info.json")" = 7
    check "json: conv2d count" test "$(jq '.op_counts.conv2d' "$TMP/info.json")" = 2
    check "json: op order" test "$(jq -c '.op_counts | keys_unsorted' "$TMP/info.json")" = \
        '["conv2d","matmul","ewadd","relu","globalavgpool","reshape"]'
    check "json: flops" test "$(jq .flops "$TMP/info.json")" = 17197
    check "json: multiply_adds" test "$(jq .multiply_adds "$TMP/info.json")" = 7956
    check "json: params" test "$(jq .params "$TMP/info.json")" = 153
    check "json: param_bytes" test "$(jq .param_bytes "$TMP/info.json")" = 612
    check "json: activation_bytes" test "$(jq .activation_bytes "$TMP/info.json")" = 4148
    check "json: input shape" test "$(jq -c '.inputs[0].shape' "$TMP/info.json")" = '[1,3,8,8]'
    check "json: outputs" test "$(jq -c '[.outputs[].name]' "$TMP/info.json")" = '["fc/out","x"]'
else
    check "json: flops" has "$TMP/info.json" '"flops": 17197'
    check "json: params" has "$TMP/info.json" '"params": 153'
fi
"$TASC" info --help > "$TMP/help.txt"
check "info --help exits 0" test $? -eq 0
check "info --help: usage and exit codes" has "$TMP/help.txt" 'exit codes'

# --- run -----------------------------------------------------------------------------------
"$TASC" run $SMALL --seed 3 --threads 1 > "$TMP/run1.txt" 2> "$TMP/run1.err"
check "run --threads 1 exits 0" test $? -eq 0
check "run: nothing on stderr" test ! -s "$TMP/run1.err"
"$TASC" run $SMALL --seed 3 --threads 2 > "$TMP/run2.txt"
check "run: identical output for 1 and 2 threads" cmp -s "$TMP/run1.txt" "$TMP/run2.txt"
check "run: a line per output" test "$(grep -c '^output ' "$TMP/run1.txt")" = 2
check "run: fc/out summary" has "$TMP/run1.txt" '^output fc/out: shape \(1,5\) mean [-0-9.e]+ std [0-9.e-]+ min .* checksum [0-9.e+-]+ nan 0 inf 0$'
check "run: memory line" has "$TMP/run1.txt" '^memory: peak 3840 bytes .* 5528 bytes allocated in all, 7 nodes run$'
"$TASC" run $SMALL --seed 4 > "$TMP/run4.txt"
sum3=$(line "$TMP/run1.txt" '^output fc/out' | sed 's/.*checksum \([^ ]*\).*/\1/')
sum4=$(line "$TMP/run4.txt" '^output fc/out' | sed 's/.*checksum \([^ ]*\).*/\1/')
check "run: another seed, another checksum ($sum3 vs $sum4)" test "$sum3" != "$sum4"
# the generated input x is normal(0, 1): 192 values, mean near 0, std near 1
xs=$(line "$TMP/run1.txt" '^output x:')
xmean=$(echo "$xs" | sed 's/.* mean \([^ ]*\) .*/\1/')
xstd=$(echo "$xs" | sed 's/.* std \([^ ]*\) .*/\1/')
check "run: generated input mean $xmean std $xstd" awk -v m="$xmean" -v s="$xstd" \
    'BEGIN { exit !(m > -0.3 && m < 0.3 && s > 0.8 && s < 1.2) }'

# outputs to .npy, then the written input fed back: the same results
"$TASC" run $SMALL --seed 3 --out-dir "$TMP/out" > "$TMP/run_out.txt"
check "run --out-dir exits 0" test $? -eq 0
check "run: fc_out.npy written (128-byte header + 5 floats)" test "$(stat -c %s "$TMP/out/fc_out.npy" 2>/dev/null)" = 148
check "run: x.npy written (128 + 192 floats)" test "$(stat -c %s "$TMP/out/x.npy" 2>/dev/null)" = 896
check "run: .npy magic" test "$(head -c 6 "$TMP/out/x.npy" | tail -c 5)" = NUMPY
check "run: wrote lines" has "$TMP/run_out.txt" "^wrote $TMP/out/fc_out.npy$"
check "run: only the two outputs in the folder" test "$(ls -A "$TMP/out" | wc -l)" = 2
"$TASC" run $SMALL --seed 99 --input x="$TMP/out/x.npy" > "$TMP/run_in.txt"
check "run --input exits 0" test $? -eq 0
check "run --input: same outputs as the generated run" \
    test "$(grep '^output' "$TMP/run_in.txt")" = "$(grep '^output' "$TMP/run1.txt")"
# the same run through the --opt=value spellings writes the same bytes
"$TASC" run $SMALL --seed 3 --input=x="$TMP/out/x.npy" --out-dir="$TMP/out2" --threads=2 > /dev/null
check "run: option=value forms; same bytes written" cmp -s "$TMP/out/fc_out.npy" "$TMP/out2/fc_out.npy"

# names that sanitise to the same file name get distinct files
"$TASC" run $D/collide.json --out-dir "$TMP/coll" > "$TMP/coll.txt"
check "run collide: exits 0" test $? -eq 0
check "run collide: a_b.npy, a_b_1.npy, a_b_1_2.npy" test "$(cd "$TMP/coll" && ls | tr '\n' ' ')" = "a_b.npy a_b_1.npy a_b_1_2.npy "
check "run collide: three different files" test "$(cd "$TMP/coll" && md5sum * | awk '{print $1}' | sort -u | wc -l)" = 3

# int64 ids: generated ids stay inside the table; given ids are used as they are
"$TASC" run $D/gather.json --seed 1 > "$TMP/g.txt"
check "run gather: exits 0" test $? -eq 0
check "run gather: generated ids in [0, 5)" awk '/^output ids:/ { for (i = 1; i <= NF; i++) { if ($i == "min") mn = $(i+1); if ($i == "max") mx = $(i+1) } } END { exit !(mn >= 0 && mx <= 4) }' "$TMP/g.txt"
"$TASC" run $D/gather.json --input ids=$D/ids_ok.npy > "$TMP/g2.txt"
check "run gather --input: ids 4,0,2,4 sum to 10" has "$TMP/g2.txt" '^output ids: shape \(4\) mean 2.5 .* checksum 10 nan 0 inf 0$'
check "run --help" "$TASC" run --help > /dev/null

# --- dot -----------------------------------------------------------------------------------
"$TASC" dot $SMALL > "$TMP/small.dot"
check "dot exits 0" test $? -eq 0
check "dot: a digraph" has "$TMP/small.dot" '^digraph'
check "dot: closes" test "$(tail -1 "$TMP/small.dot")" = "}"
check "dot: names the node conv1" has "$TMP/small.dot" 'conv1'
check "dot: names the op globalavgpool" has "$TMP/small.dot" 'globalavgpool'
"$TASC" dot $SMALL --out "$TMP/small2.dot"
check "dot --out: same text as stdout" cmp -s "$TMP/small.dot" "$TMP/small2.dot"
if command -v dot > /dev/null; then
    check "dot: Graphviz accepts it" dot -Tsvg "$TMP/small.dot" -o "$TMP/small.svg"
fi

# --- ops -----------------------------------------------------------------------------------
"$TASC" ops > "$TMP/ops.txt" 2> "$TMP/ops.err"
check "ops exits 0" test $? -eq 0
n_ops=$(grep -c '^OP(' ops/ops.def)
check "ops: one entry per ops.def line ($n_ops)" test "$(grep -cE '^[a-z_0-9]+$' "$TMP/ops.txt")" = "$n_ops"
check "ops: self-check ok" has "$TMP/ops.txt" "^$n_ops operators; op table self-check: ok$"
check "ops: conv2d's stride domain" has "$TMP/ops.txt" '^    stride_h +int \[1, 16\] default 1$'
check "ops: act enum" has "$TMP/ops.txt" 'act +\{none\|relu\|sigmoid\|tanh\|gelu\|silu\|gelu_tanh\|relu6\|hardswish\} default none'
check "ops: concat fan-in" has "$TMP/ops.txt" '^    inputs 1\.\.64, outputs 1'
"$TASC" ops matmul --verbose > "$TMP/ops_mm.txt"
check "ops matmul --verbose: one op" test "$(grep -cE '^[a-z_0-9]+$' "$TMP/ops_mm.txt")" = 1
check "ops --verbose: slots" has "$TMP/ops_mm.txt" '^    slots: shape yes, cpu yes, flops yes'

# --- model ---------------------------------------------------------------------------------
"$TASC" model --list > "$TMP/list.txt"
check "model --list exits 0" test $? -eq 0
check "model --list: resnet50" has "$TMP/list.txt" '^resnet50$'
check "model --list: squeezenet" has "$TMP/list.txt" '^squeezenet$'
"$TASC" model squeezenet > "$TMP/sq1.json"
check "model to stdout exits 0" test $? -eq 0
"$TASC" model squeezenet --out "$TMP/sq2.json"
check "model --out: same bytes as stdout" cmp -s "$TMP/sq1.json" "$TMP/sq2.json"
"$TASC" model squeezenet --batch 2 --out "$TMP/sq_b2.json"
check "model --batch 2: different model" test "$(cmp -s "$TMP/sq1.json" "$TMP/sq_b2.json"; echo $?)" = 1
"$TASC" info "$TMP/sq2.json" > "$TMP/sq.txt"
check "model: the written model loads" test $? -eq 0
check "model: squeezenet input (1,3,224,224)" has "$TMP/sq.txt" '\(1,3,224,224\)'
"$TASC" info "$TMP/sq_b2.json" > "$TMP/sq_b2.txt"
check "model --batch 2: input (2,3,224,224)" has "$TMP/sq_b2.txt" '\(2,3,224,224\)'
f1=$(line "$TMP/sq.txt" '^flops:' | awk '{print $2}')
f2=$(line "$TMP/sq_b2.txt" '^flops:' | awk '{print $2}')
check "model --batch 2: twice the FLOPs ($f1, $f2)" awk -v a="$f1" -v b="$f2" 'BEGIN { exit !(b == 2 * a) }'

# --- every command answers --help on stdout with exit 0 -----------------------------------
for c in info run dot ops model; do
    out=$("$TASC" $c --help 2> "$TMP/h.err")
    rc=$?
    if [ $rc -eq 0 ] && [ ! -s "$TMP/h.err" ] && echo "$out" | grep -q "^usage: tasc $c"; then ok; else bad "$c --help"; fi
done

echo "cli_basic.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
