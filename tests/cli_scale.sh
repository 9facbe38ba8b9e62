#!/usr/bin/env bash
# cli_scale.sh TASC: a chain of N relu nodes (TASC_SCALE_NODES, default 100,000), generated here,
# goes through info, run, export, import (the ONNX file back) and optimize
# (built-in rewrites, one check seed); the same for N/10 nodes. Each command must succeed, and
# none may take more than TASC_SCALE_RATIO (default 40) times as long for N nodes as for N/10:
# linear work gives about 10, a quadratic step 100. Prints a table of the times. bench needs a
# GPU; it is run when a one-rep bench of the small chain finds one (exit 3, no GPU: reported as
# not run).
set -u
TASC=${1:?usage: cli_scale.sh TASC}
cd "$(dirname "$0")/.." || exit 1
N=${TASC_SCALE_NODES:-100000}
RATIO=${TASC_SCALE_RATIO:-40}
fail=0
tmp=$(mktemp -d /tmp/tasc_cli_scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

chain() { # chain N FILE
    awk -v n="$1" 'BEGIN {
      printf "{\"format\": \"tasc-model\", \"version\": 1, \"inputs\": [{\"name\": \"x\", \"shape\": [1, 16]}],\n \"nodes\": [\n"
      for (i = 0; i < n; i++)
        printf "  {\"name\": \"r%d\", \"op\": \"relu\", \"inputs\": [\"%s\"]}%s\n", i, i ? "r" (i - 1) : "x", i < n - 1 ? "," : ""
      printf " ],\n \"outputs\": [\"r%d\"]}\n", n - 1 }' > "$2"
}

# timed NAME SIZE CMD...: run tasc CMD, record its seconds in $tmp/t.NAME.SIZE
timed() {
    local name=$1 size=$2
    shift 2
    local t0 t1
    t0=$(date +%s.%N)
    if ! "$TASC" "$@" > "$tmp/out" 2> "$tmp/err"; then
        echo "FAIL: tasc $* ($size nodes): $(head -c 400 "$tmp/err")"
        fail=1
    fi
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' > "$tmp/t.$name.$size"
}

steps="info run export import optimize"
for n in $((N / 10)) $N; do
    d=$tmp/n$n
    mkdir -p "$d"
    chain "$n" "$d/chain.json"
    timed info "$n" info "$d/chain.json"
    timed run "$n" run "$d/chain.json" --out-dir "$d/run"
    [ -n "$(grep -F "$n nodes run" "$tmp/out")" ] || { echo "FAIL: run did not run $n nodes: $(tail -1 "$tmp/out")"; fail=1; }
    timed export "$n" export "$d/chain.json" --out "$d/chain.onnx"
    timed import "$n" import "$d/chain.onnx" --out "$d/back.json"
    timed optimize "$n" optimize "$d/chain.json" --rules none --seeds 1 --out "$d/opt.json" --quiet
done
"$TASC" bench "$tmp/n$((N / 10))/chain.json" --reps 1 --warmup 0 --no-cpu > /dev/null 2>&1
if [ $? -ne 3 ]; then
    timed bench "$N" bench "$tmp/n$N/chain.json" --reps 100 --warmup 5
    steps="$steps bench"
fi

printf '%-10s %10s %10s %7s\n' step "$((N / 10))" "$N" ratio
for s in $steps; do
    a=$(cat "$tmp/t.$s.$((N / 10))" 2> /dev/null || echo -)
    b=$(cat "$tmp/t.$s.$N")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0.05) printf "%.1f", b / a; else print "-" }')
    printf '%-10s %9ss %9ss %7s\n' "$s" "$a" "$b" "$r"
    if [ "$r" != "-" ] && awk -v r="$r" -v m="$RATIO" 'BEGIN { exit !(r > m) }'; then
        echo "FAIL: $s took $r times as long for $N nodes as for $((N / 10)) (at most $RATIO: not linear)"
        fail=1
    fi
done
[ -z "$(grep -l bench <<< "$steps")" ] && echo "bench: not run (no GPU)"
echo "cli_scale: $fail failed"
[ $fail -eq 0 ]
