#!/usr/bin/env bash
# bench/generate/run.sh TASC [MAX_OPS...]: time `tasc generate` for each MAX_OPS (default 1 2 3 4)
# on all cores and append the summary tables, with the machine and the date, to
# bench/generate/results.md. The rule files go to bench/generate/out/ (not kept in git).
# Benchmarks are programs, not tests: this prints and records, it does not judge.
set -eu
tasc=${1:?usage: bench/generate/run.sh TASC [MAX_OPS...]}
shift
sizes=${*:-1 2 3 4}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/out"
{
    echo
    echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)" \
         "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
    for n in $sizes; do
        echo
        echo "### --max-ops $n"
        echo '```'
        "$tasc" generate --max-ops "$n" --out "$here/out/rules_$n.json"
        echo '```'
    done
} | tee -a "$here/results.md"
