#!/usr/bin/env bash
# cli_scale.sh TASC: a chain of N relu nodes (TASC_SCALE_NODES, default 100,000), generated here,
# goes through every command that loads a model: info (the JSON loader; also a chain whose nodes
# have no names, so the loader names them), run, export, import (the ONNX file back), optimize
# with built-in rewrites only (--rules none) and with the default rules (the whole rule set
# matched against the chain: two graphs expanded, --budget 2, so the work does not depend on
# machine speed), and bench where a GPU answers. The same for N/2 nodes. Each command must
# succeed and, for N nodes,
#   - use at most TASC_SCALE_CPU seconds of CPU time (user + sys; default 60, a few seconds
#     where the work is linear; wall-clock time is printed but not judged, it is mostly the
#     load of a shared machine) and at most TASC_SCALE_MEM_MB of memory (max RSS; default 2048);
#   - take at most TASC_SCALE_RATIO (default 3) times the CPU time and 2.5 times the memory it
#     took for N/2 nodes: linear work gives about 2, quadratic 4 (steps under 0.3 s of CPU for
#     N/2 are not compared, their times are mostly start-up).
# Prints a table of the measurements. bench needs a GPU; it is run when a one-rep bench of the
# small chain finds one (exit 3, no GPU: reported as not run; the runtime's memory planner, the
# part of bench whose cost grows with the graph, is timed on a 100,000-buffer chain by
# tests/test_plan.c).
set -u
TASC=${1:?usage: cli_scale.sh TASC}
cd "$(dirname "$0")/.." || exit 1
N=${TASC_SCALE_NODES:-100000}
RATIO=${TASC_SCALE_RATIO:-3}
CPU_MAX=${TASC_SCALE_CPU:-60}
MEM_MB=${TASC_SCALE_MEM_MB:-2048}
fail=0
tmp=$(mktemp -d /tmp/tasc_cli_scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

chain() { # chain N FILE [anon]: a relu chain; anon: nodes without names (relu_0, relu_1, ...)
    awk -v n="$1" -v anon="${3:-}" 'BEGIN {
      printf "{\"format\": \"tasc-model\", \"version\": 1, \"inputs\": [{\"name\": \"x\", \"shape\": [1, 16]}],\n \"nodes\": [\n"
      p = anon ? "relu_" : "r"
      for (i = 0; i < n; i++) {
        nm = anon ? "" : sprintf("\"name\": \"r%d\", ", i)
        printf "  {%s\"op\": \"relu\", \"inputs\": [\"%s\"]}%s\n", nm, i ? p (i - 1) : "x", i < n - 1 ? "," : ""
      }
      printf " ],\n \"outputs\": [\"%s%d\"]}\n", p, n - 1 }' > "$2"
}

# timed NAME SIZE CMD...: run tasc CMD; record "wall cpu maxrss_kb" in $tmp/t.NAME.SIZE
# (python3 for the child's rusage: CMake already requires it)
timed() {
    local name=$1 size=$2
    shift 2
    if ! python3 - "$tmp/t.$name.$size" "$TASC" "$@" > "$tmp/out" 2> "$tmp/err" <<'EOF'; then
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[2:])
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write("%.3f %.3f %d\n" % (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
sys.exit(rc)
EOF
        echo "FAIL: tasc $* ($size nodes): $(head -c 400 "$tmp/err")"
        fail=1
    fi
}

# step NAME N: run step NAME on the chain of N nodes (files in $tmp/nN), measured by timed
step() {
    local d=$tmp/n$2
    case $1 in
    info) timed info "$2" info "$d/chain.json" ;;
    info-anon) timed info-anon "$2" info "$d/anon.json" ;;
    run)
        timed run "$2" run "$d/chain.json" --out-dir "$d/run"
        grep -qF "$2 nodes run" "$tmp/out" || { echo "FAIL: run did not run $2 nodes: $(tail -1 "$tmp/out")"; fail=1; } ;;
    export) timed export "$2" export "$d/chain.json" --out "$d/chain.onnx" ;;
    import) timed import "$2" import "$d/chain.onnx" --out "$d/back.json" ;;
    optimize) timed optimize "$2" optimize "$d/chain.json" --rules none --seeds 1 --out "$d/opt.json" --quiet ;;
    optimize-rules)
        timed optimize-rules "$2" optimize "$d/chain.json" --budget 2 --time-limit 0 --seeds 1 --out "$d/opt2.json" --quiet
        grep -q "search: 2 graphs expanded" "$tmp/out" || { echo "FAIL: optimize did not expand 2 graphs: $(grep search: "$tmp/out")"; fail=1; } ;;
    bench) timed bench "$2" bench "$d/chain.json" --reps 100 --warmup 5 ;;
    esac
}

# ratio NAME: CPU time for N over N/2 ("-" when N/2 took under 0.3 s: mostly start-up)
ratio() {
    local wa ca ma wb cb mb
    read -r wa ca ma < "$tmp/t.$1.$((N / 2))" 2> /dev/null || ca=0
    read -r wb cb mb < "$tmp/t.$1.$N" 2> /dev/null || cb=0
    awk -v a="$ca" -v b="$cb" 'BEGIN { if (a + 0 >= 0.3) printf "%.2f", b / a; else print "-" }'
}

steps="info info-anon run export import optimize optimize-rules"
for n in $((N / 2)) $N; do
    mkdir -p "$tmp/n$n"
    chain "$n" "$tmp/n$n/chain.json"
    chain "$n" "$tmp/n$n/anon.json" anon
    for s in $steps; do
        step "$s" "$n"
    done
done
"$TASC" bench "$tmp/n$((N / 2))/chain.json" --reps 1 --warmup 0 --no-cpu > /dev/null 2>&1
if [ $? -ne 3 ]; then
    step bench $((N / 2))
    step bench "$N"
    steps="$steps bench"
fi
# a ratio over the bound is measured once more, both sizes, before it counts: on a shared machine
# one slow run is more likely than a quadratic step that is fast the second time
for s in $steps; do
    r=$(ratio "$s")
    if [ "$r" != "-" ] && awk -v r="$r" -v m="$RATIO" 'BEGIN { exit !(r > m) }'; then
        echo "note: $s: ratio $r, measured again"
        step "$s" $((N / 2))
        step "$s" "$N"
    fi
done

echo "CPU seconds (user + sys) for $((N / 2)) and $N nodes, their ratio; for $N: wall seconds, max RSS (MB) and its ratio"
printf '%-15s %9s %9s %6s %9s %9s %6s\n' step cpu cpu ratio wall MB ratio
for s in $steps; do
    read -r wa ca ma < "$tmp/t.$s.$((N / 2))" 2> /dev/null || { wa=0 ca=0 ma=0; }
    read -r wb cb mb < "$tmp/t.$s.$N" 2> /dev/null || { wb=0 cb=0 mb=0; }
    r=$(ratio "$s")
    rm=$(awk -v a="$ma" -v b="$mb" 'BEGIN { if (a + 0 > 0) printf "%.2f", b / a; else print "-" }')
    printf '%-15s %9s %9s %6s %9s %9d %6s\n' "$s" "$ca" "$cb" "$r" "$wb" $((mb / 1024)) "$rm"
    if [ "$r" != "-" ] && awk -v r="$r" -v m="$RATIO" 'BEGIN { exit !(r > m) }'; then
        echo "FAIL: $s used $r times the CPU time for $N nodes as for $((N / 2)) (at most $RATIO: not linear)"
        fail=1
    fi
    if awk -v c="$cb" -v m="$CPU_MAX" 'BEGIN { exit !(c > m) }'; then
        echo "FAIL: $s used $cb s of CPU time for $N nodes (at most $CPU_MAX)"
        fail=1
    fi
    if [ $((mb / 1024)) -gt "$MEM_MB" ] || { [ "$rm" != "-" ] && awk -v r="$rm" 'BEGIN { exit !(r > 2.5) }'; }; then
        echo "FAIL: $s held $((mb / 1024)) MB for $N nodes, $rm times as much as for $((N / 2)) (at most $MEM_MB MB, 2.5 times)"
        fail=1
    fi
done
grep -qw bench <<< "$steps" || echo "bench: not run (no GPU; tests/test_plan.c times the memory planner)"
echo "cli_scale: $fail failed"
[ $fail -eq 0 ]
