#!/usr/bin/env bash
# bench/rules/run.sh TASC [RULES]: how much of a rule set the rest derives, and whether the smaller
# set changes any optimization. `tasc rules prune` by one move, and by 1 and by 3 rounds of
# equality saturation per rule (the summary tables and times), then
# bench/rules/prune_compare.sh for each pruned set against RULES
# (default: rules/verified-4-full.json.xz, decompressed; a .xz file is decompressed) on the zoo and the shared ONNX models. Everything is appended
# to bench/rules/results.md (or $RESULTS_MD). Times are wall clock on this machine. PRUNES: which
# prunes (default "move rounds1 rounds3").
set -u
TASC=${1:?usage: bench/rules/run.sh TASC [RULES]}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RULES=${2:-$ROOT/rules/verified-4-full.json.xz}
OUT_MD=${RESULTS_MD:-$HERE/results.md}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$RULES" in
*.xz) base=$(basename "${RULES%.xz}"); xz -dc "$RULES" >"$work/$base" || exit 1; RULES=$work/$base ;;
esac
for how in ${PRUNES:-move rounds1 rounds3}; do
    case $how in
    move) opts="--by move" ;;
    rounds*) opts="--by rounds --iters ${how#rounds}" ;;
    esac
    pruned="$work/$(basename "${RULES%.json}")-$how.json"
    start=$(date +%s.%N)
    "$TASC" rules prune --rules "$RULES" $opts --out "$pruned" --list "$work/list$how.txt" \
        >"$work/prune$how.txt" || { echo "run.sh: tasc rules prune failed" >&2; exit 1; }
    end=$(date +%s.%N)
    cat "$work/prune$how.txt"
    {
        echo
        echo "## $(date -u +%Y-%m-%d) \`tasc rules prune --rules $(basename "$RULES") $opts\`"
        echo
        echo "Machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$TASC" --version 2>&1 | head -1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }') s wall."
        echo
        echo '```'
        cat "$work/prune$how.txt"
        echo '```'
    } >>"$OUT_MD"
    "$HERE/prune_compare.sh" "$TASC" "$RULES" "$pruned" "$OUT_MD" || exit 1
done
