#!/usr/bin/env bash
# cli_errors.sh TASC: every kind of bad input to the tasc CLI, one fixture each in tests/data/cli/.
# For each case: the exit code (1 bad input, 2 bad command line), nothing on stdout, exactly one
# line on stderr that names the file, the place (node name or line:col) and the problem, and no
# output file or folder created. Model errors are checked through info, run --out-dir and
# dot --out. Prints "N passed, N failed"; exits 1 on any failure.
set -u
TASC=${1:?usage: cli_errors.sh TASC_BINARY}
cd "$(dirname "$0")/.." || exit 1
D=tests/data/cli
TMP=$(mktemp -d /tmp/tasc_cli_errors.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
KW=()

# expect CODE CMD ARGS...: run tasc; check the code, empty stdout, one stderr line holding
# every keyword in KW, and that $TMP/out* does not exist afterwards.
expect() {
    local code=$1; shift
    local what="tasc $*"
    "$TASC" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
    local rc=$? problems=""
    [ $rc -eq "$code" ] || problems="$problems exit $rc (want $code);"
    [ -s "$TMP/stdout" ] && problems="$problems stdout not empty;"
    local n
    n=$(wc -l < "$TMP/stderr")
    [ "$n" -eq 1 ] || problems="$problems $n stderr lines;"
    for k in "${KW[@]}"; do
        grep -qF -- "$k" "$TMP/stderr" || problems="$problems no '$k' in stderr;"
    done
    local left
    left=$(cd "$TMP" && ls -d out* 2> /dev/null)
    [ -n "$left" ] && problems="$problems left output: $left;"
    rm -rf "$TMP"/out*
    if [ -z "$problems" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what:$problems" >&2
        sed 's/^/    stderr: /' "$TMP/stderr" >&2
    fi
}

# model_case FIXTURE KEYWORDS...: the model cannot be loaded; info, run and dot all say so.
model_case() {
    local f=$D/$1; shift
    KW=("$f" "$@")
    KW[0]="tasc info: $f"
    expect 1 info "$f"
    KW[0]="tasc run: $f"
    expect 1 run "$f" --out-dir "$TMP/out_run"
    KW[0]="tasc dot: $f"
    expect 1 dot "$f" --out "$TMP/out.dot"
}

# --- model files --------------------------------------------------------------------------
model_case bad_syntax.json "bad_syntax.json:5:9:" "expected"
model_case unknown_op.json "node 'frob1'" "unknown op 'frobnicate'"
model_case input_count.json "node 'relu2'" "takes 1 input, got 2"
model_case unknown_param.json "node 'convp'" "unknown parameter 'strid'"
model_case param_domain.json "node 'convd'" "'stride_h' = 0" "out of range"
model_case shape_mismatch.json "node 'mm'" "matmul" "rows"
model_case dangling.json "node 's'" "'nowhere'" "names no tensor"
model_case duplicate.json "node 'twice'" "duplicate node name"
model_case cycle.json "node 'a'" "cycle" "a -> b -> c -> a"
model_case empty.json "\"nodes\" is empty"
model_case overflow.json "input 'big'" "(4294967296,4294967296,4294967296)" "int64"
model_case no_such_model.json "cannot open" "No such file"
model_case act_int.json "node 'conv1'" "parameter 'act' must be a name, got an integer" "none, relu"
model_case outside.json "weight 'wout'" "file '../onnx/ext_data.bin' resolves to" "outside the model's folder" \
    "--allow-outside-paths"
model_case outside_abs.json "weight 'wout'" "file '/etc/passwd' resolves to" "outside the model's folder"

# the per-tensor element limit from the environment
export TASC_MAX_ELEMENTS=100
KW=("tasc info: $D/small.json" "input 'x'" "192 elements" "limit of 100" "TASC_MAX_ELEMENTS")
expect 1 info $D/small.json
KW=("tasc run: $D/small.json" "input 'x'" "limit of 100")
expect 1 run $D/small.json --out-dir "$TMP/out_lim"
export TASC_MAX_ELEMENTS=lots
KW=("tasc info:" "TASC_MAX_ELEMENTS" "'lots'")
expect 1 info $D/small.json
unset TASC_MAX_ELEMENTS

# --- errors found while running -------------------------------------------------------------
# a weight's data file is missing: the model loads, the run names the weight and the file
KW=("tasc run: $D/missing_data.json" "weight 'wdata'" "no_such_weights.bin" "No such file")
expect 1 run $D/missing_data.json --out-dir "$TMP/out_md"
# outputs holding NaN: a failed check, and no files written
KW=("tasc run: $D/nan.json" "output 'root'" "NaN")
expect 1 run $D/nan.json --out-dir "$TMP/out_nan"
# a malformed .npy input
KW=("tasc run: $D/bad.npy" "bad .npy header")
expect 1 run $D/small.json --input x=$D/bad.npy --out-dir "$TMP/out_npy"
KW=("tasc run: $D/not_there.npy" "cannot open")
expect 1 run $D/small.json --input x=$D/not_there.npy
# an input of the wrong shape: both shapes and both files named
KW=("tasc run: $D/wrong_shape.npy" "(1,3,8,9)" "input 'x' (1,3,8,8)" "$D/small.json")
expect 1 run $D/small.json --input x=$D/wrong_shape.npy --out-dir "$TMP/out_ws"
# an input the model does not have
KW=("tasc run: $D/small.json" "no input named 'y'")
expect 1 run $D/small.json --input y=$D/wrong_shape.npy
# ids outside the gathered table
KW=("tasc run: $D/gather.json" "node 'emb'" "id 7" "[0, 5)")
expect 1 run $D/gather.json --input ids=$D/ids_bad.npy --out-dir "$TMP/out_ids"
# a folder that cannot be made: nothing else written
touch "$TMP/plainfile"
KW=("tasc run: $TMP/plainfile/sub" "cannot create folder")
expect 1 run $D/small.json --out-dir "$TMP/plainfile/sub"
KW=("tasc dot: $TMP/nodir/x.dot" "cannot create")
expect 1 dot $D/small.json --out "$TMP/nodir/x.dot"
KW=("tasc model: $TMP/nodir/sq.json")
expect 1 model squeezenet --out "$TMP/nodir/sq.json"

# --- command lines (exit 2) -----------------------------------------------------------------
for c in info run dot ops model; do
    KW=("tasc $c: unknown option '--bogus'" "tasc $c --help")
    expect 2 $c --bogus
done
KW=("tasc info: missing MODEL")
expect 2 info
KW=("tasc run: missing MODEL")
expect 2 run --seed 1
KW=("tasc dot: missing MODEL")
expect 2 dot
KW=("tasc info: unexpected argument 'b.json'")
expect 2 info a.json b.json
KW=("tasc run: bad value for --seed: 'abc'")
expect 2 run $D/small.json --seed abc --out-dir "$TMP/out_seed"
KW=("tasc run: bad value for --seed: '-1'")
expect 2 run $D/small.json --seed -1
KW=("tasc run: bad value for --threads: '0'")
expect 2 run $D/small.json --threads 0
KW=("tasc run: option --threads needs a value")
expect 2 run $D/small.json --threads
KW=("tasc run: bad value for --input: 'x'" "NAME=FILE.npy")
expect 2 run $D/small.json --input x
KW=("tasc run: input 'x' given twice")
expect 2 run $D/small.json --input x=a.npy --input x=b.npy
KW=("tasc dot: option --out needs a value")
expect 2 dot $D/small.json --out
KW=("tasc model: unknown model 'nosuchnet'" "--list")
expect 2 model nosuchnet --out "$TMP/out_m.json"
KW=("tasc model: bad value for --batch: '0'")
expect 2 model squeezenet --batch 0 --out "$TMP/out_b.json"
KW=("tasc model: missing NAME")
expect 2 model
KW=("tasc ops: unknown operator 'frob'")
expect 1 ops frob

echo "cli_errors.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
