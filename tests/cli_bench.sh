#!/usr/bin/env bash
# cli_bench.sh TASC: `tasc bench` command-line handling. A bad command line is refused with one
# line on stderr and exit 2 before any GPU work; without CUDA in the build, or without a GPU, one
# line and exit 3. Skipped (77) while the tasc binary does not list `bench`. The benchmark itself
# needs a GPU and runs on the GPU machine (bench/runtime/run_device.sh).
set -u
TASC=${1:?usage: cli_bench.sh TASC}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$TASC" --help 2>/dev/null | grep -q "^  bench "; then
    echo "SKIPPED: this tasc has no bench command"
    exit 77
fi

. "$(dirname "$0")/lib_cli.sh" # expect CODE PATTERN ARGS...

expect 0 "" bench --help
grep -q "usage: tasc bench MODEL \[OPTIMIZED" "$tmp/out" || { echo "FAIL: bench --help prints no usage"; fail=1; }
grep -q -- "--no-fuse .*run every node the runtime fuses" "$tmp/out" ||
    { echo "FAIL: bench --help does not describe --no-fuse"; fail=1; }
grep -q -- "--block N .*timed runs of one graph before the other's turn" "$tmp/out" ||
    { echo "FAIL: bench --help does not describe --block"; fail=1; }
"$TASC" model squeezenet --out "$tmp/m.json" || { echo "FAIL: tasc model squeezenet"; exit 1; }

"$TASC" bench "$tmp/m.json" --reps 1 --warmup 0 --no-cpu >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 3 ] && grep -q "built without CUDA" "$tmp/err"; then
    # CPU-only build: every use says so, one line, exit 3
    expect 3 "tasc bench: this tasc was built without CUDA" bench "$tmp/m.json"
    expect 3 "built without CUDA" bench --reps 0
elif [ $rc = 3 ]; then
    # CUDA build on a machine without a GPU: one line naming the missing device
    expect 3 "tasc bench: .*CUDA device" bench "$tmp/m.json"
else
    [ $rc = 0 ] || { echo "FAIL: bench on squeezenet exited $rc: $(cat "$tmp/err")"; fail=1; }
    grep -q "latency median (ms)" "$tmp/out" || { echo "FAIL: bench prints no latency"; fail=1; }
    grep -q "nodes fused into others" "$tmp/out" || { echo "FAIL: bench prints no fusion count"; fail=1; }
    expect 1 "differ in their inputs\|has shape" bench "$tmp/m.json" models/../tests/data/onnx/all_ops.json
fi
if ! grep -q "built without CUDA" "$tmp/err"; then
    expect 2 "no model given" bench
    expect 2 "too many models" bench a.json b.json c.json
    expect 2 "bad value for --reps" bench --reps 0 "$tmp/m.json"
    expect 2 "bad value for --tol" bench --tol x "$tmp/m.json"
    expect 2 "bad value for --block" bench --block 0 "$tmp/m.json"
    expect 2 "bad value for --check-nodes" bench --check-nodes 0 "$tmp/m.json"
    expect 2 "unknown option '--bogus'" bench --bogus "$tmp/m.json"
    expect 2 "missing value\|needs a value\|--json" bench "$tmp/m.json" --json
    expect 2 "give MODEL only" bench "$tmp/m.json" "$tmp/m.json" --optimize
    expect 2 "go with --optimize" bench "$tmp/m.json" --rules r.json
    expect 2 "bad value for --cost" bench "$tmp/m.json" --optimize --cost fast
    expect 2 "bad value for --time-limit" bench "$tmp/m.json" --optimize --time-limit -1
fi
exit $fail
