#!/usr/bin/env bash
# bench/verify/run.sh TASC [CANDIDATES]: time the verifier and append the results, with the machine
# and the date, to bench/verify/results.md:
#   1. tasc verify on the 4-op candidate set (generated here with tasc generate --max-ops 4 unless
#      CANDIDATES is given), no cache, all cores, then with 1 thread;
#   2. the same again through a fresh cache, twice (the second run proves nothing);
#   3. tasc axioms check (every axiom on every small shape, redundancy report, probes);
#   4. re-proving the shipped rule sets (what CI does).
# Outputs go to bench/verify/out/ (not kept in git). Benchmarks print and record; they do not judge.
set -eu
tasc=${1:?usage: bench/verify/run.sh TASC [CANDIDATES]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/out"
mkdir -p "$out"
cand=${2:-$out/candidates-4.json}
cd "$root"
t() { # t LABEL CMD...: run, print the command's output, then the wall time
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    "$@"
    t1=$(date +%s.%N)
    printf '%s: %.1f s wall\n' "$label" "$(echo "$t1 - $t0" | bc)"
}
{
    echo
    echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)" \
         "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
    echo '```'
    if [ ! -s "$cand" ]; then
        t "generate --max-ops 4" "$tasc" generate --max-ops 4 --out "$cand"
    fi
    t "verify, all cores, no cache" "$tasc" verify "$cand" --out "$out/verified-4.json" --no-cache
    t "verify, 1 thread, no cache" "$tasc" verify "$cand" --out "$out/verified-4-t1.json" --no-cache --threads 1
    rm -f "$out/bench.cache"
    t "verify, filling a cache" "$tasc" verify "$cand" --out "$out/verified-4-c.json" --cache "$out/bench.cache"
    t "verify, from the cache" "$tasc" verify "$cand" --out "$out/verified-4-c.json" --cache "$out/bench.cache"
    t "axioms check" "$tasc" axioms check
    t "re-prove rules/verified-3.json" "$tasc" verify rules/verified-3.json --out "$out/re3.json" --no-cache --require-all
    t "re-prove rules/verified-4.json" "$tasc" verify rules/verified-4.json --out "$out/re4.json" --no-cache --require-all
    echo '```'
} 2>&1 | tee -a "$here/results.md"
