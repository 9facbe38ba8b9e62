#!/usr/bin/env bash
# cli_kernels.sh TASC: `tasc kernels` command-line handling. Every bad command line is refused
# with one line on stderr and exit 2 before any GPU work; a build without CUDA says so (exit 3).
# The benchmark itself needs a GPU and is not run here (scripts/gpu_matmul.sh runs it).
set -u
TASC=${1:?usage: cli_kernels.sh TASC}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib_cli.sh" # expect CODE PATTERN ARGS...

expect 0 "" kernels --help
grep -q "usage: tasc kernels list" "$tmp/out" || { echo "FAIL: kernels --help prints no usage"; fail=1; }

"$TASC" kernels list >"$tmp/out" 2>"$tmp/err"
if [ $? = 3 ] && grep -q "built without CUDA" "$tmp/err"; then
    # CPU-only build: every subcommand says so, one line, exit 3
    expect 3 "built without CUDA" kernels bench --sizes 1024
    expect 3 "built without CUDA" kernels tune
    expect 3 "built without CUDA" kernels probe
else
    grep -q "^  v1.5 " "$tmp/out" || { echo "FAIL: kernels list has no v1.5"; fail=1; }
    grep -q "tuned" "$tmp/out" || { echo "FAIL: kernels list has no tuned version"; fail=1; }
    grep -Eq "^ +0 128x128x8_w64x32_t8x8_s3_u8_b2 " "$tmp/out" || { echo "FAIL: kernels list has no configuration 0"; fail=1; }
    grep -Eq "_c +[0-9]+ threads" "$tmp/out" || { echo "FAIL: kernels list has no cluster configuration"; fail=1; }
    expect 2 "missing subcommand" kernels
    expect 2 "unknown subcommand 'frobnicate'" kernels frobnicate
    expect 2 "unknown option '--bogus'" kernels bench --bogus
    expect 2 "unknown option 'extra'" kernels list extra
    expect 2 "bad size '12x'" kernels bench --sizes 12x
    expect 2 "bad size '128x128'" kernels bench --sizes 128x128
    expect 2 "bad size '0'" kernels bench --sizes 1024,0
    expect 2 "bad size '1x2x3x4x5'" kernels bench --sizes 1x2x3x4x5
    expect 2 "bad size '99999999999'" kernels bench --sizes 99999999999
    expect 2 "must be in" kernels bench --sizes 2147483647x1x1
    expect 2 "unknown version 'v9'" kernels bench --versions v1,v9
    expect 2 "bad value for --reps" kernels bench --reps 0
    expect 2 "bad value for --reps" kernels bench --reps x
    expect 2 "bad value for --max-cell-s" kernels bench --max-cell-s -1
    expect 2 "needs a value" kernels bench --out
    expect 2 "bad size 'x'" kernels bench --fused x
    expect 2 "bad epilogue 'tanh'" kernels tune --epilogue none,tanh
    expect 2 "bad precision 'fp16' (fp32 or 3xtf32)" kernels tune --precision fp16
    "$TASC" kernels list | grep -q "^  mma:64x32x32_w32x32_s4_b2_k2$" ||
        { echo "FAIL: kernels list has no 3xtf32 mma.sync configuration"; fail=1; }
    expect 2 "bad size '-5'" kernels tune --sizes -5
    expect 2 "bad size '1x'" kernels probe --sizes 1x
    expect 2 "unknown option '--fused'" kernels probe --fused 64
    # with valid arguments and no GPU: a missing resource, exit 3 (with a GPU the run is too long here)
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        echo "GPU present: bench/tune runs not attempted here"
    else
        expect 3 "no CUDA device" kernels bench --sizes 64 --reps 1
        expect 3 "no CUDA device" kernels tune --sizes 64
        expect 3 "no CUDA device" kernels probe --sizes 64 --reps 1
    fi
fi
[ $fail = 0 ] && echo "cli_kernels: ok"
exit $fail
