#!/usr/bin/env bash
# bench/rules/prune_compare.sh TASC FULL PRUNED [OUT_MD]: whether a pruned rule set (`tasc rules
# prune`) changes any optimization result. Each of the seven zoo models (batch 1) and each ONNX
# model in TASC_ONNX_DIR (default ../shared/models/onnx, imported with --random-weights) is
# optimized in three modes -- default (backtracking, --builtins all), rules only (--builtins
# minimal), eqsat (--search eqsat) -- with FULL and with PRUNED (analytic cost model, --no-check:
# the question is the graph found, not its numerics), and the two results compared: predicted
# speedup, search time, and the optimized graph itself (tasc's JSON, its weights sidecar's name
# masked, and the sidecar's bytes, hashed). Prints a table and appends it, with the machine and commands, to OUT_MD
# (default bench/rules/results.md). Exit 0 even where results differ: the table says where.
set -u
TASC=${1:?usage: bench/rules/prune_compare.sh TASC FULL PRUNED [OUT_MD]}
FULL=${2:?full rule file}
PRUNED=${3:?pruned rule file}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT_MD=${4:-$HERE/results.md}
ONNX_DIR=${TASC_ONNX_DIR:-$ROOT/../shared/models/onnx}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

models="resnet50 resnext50 nasnet_a nasrnn bert inception_v3 squeezenet"
[ -d "$ONNX_DIR" ] && models="$models $(cd "$ONNX_DIR" && ls *.onnx)"
for m in $models; do
    case "$m" in
    *.onnx) "$TASC" import "$ONNX_DIR/$m" --random-weights --out "$work/$m.json" >/dev/null 2>"$work/err" ;;
    *) "$TASC" model "$m" --out "$work/$m.json" 2>"$work/err" ;;
    esac || { echo "prune_compare.sh: cannot load $m: $(cat "$work/err")" >&2; exit 1; }
done

# one optimize run: speedup, search seconds and the graph's hash, space-separated
run() { # model mode rules tag
    local m=$1 mode=$2 rules=$3 tag=$4 opts=""
    case "$mode" in
    minimal) opts="--builtins minimal" ;;
    eqsat) opts="--search eqsat" ;;
    esac
    local out="$work/$m.$mode.$tag.json" log="$work/$m.$mode.$tag.log"
    if ! "$TASC" optimize "$work/$m.json" --rules "$rules" $opts --no-check --out "$out" >"$log" 2>&1; then
        echo "prune_compare.sh: tasc optimize $m ($mode, $rules) failed: $(tail -1 "$log")" >&2
        exit 1
    fi
    local sp s h
    sp=$(sed -n 's/.*predicted speedup[^0-9]*\([0-9.]*\)x.*/\1/p' "$log" | head -1)
    s=$(sed -n 's/^optimize time: .*(search \([0-9.]*\) s).*/\1/p' "$log" | head -1)
    # the graph and its folded weights, without the sidecar's file name (and so without the
    # layout: the writer wraps a line by its length)
    h=$({ sed 's/"[^"]*\.weights\.bin"/"W"/g' "$out" | tr -d ' \n'; cat "${out%.json}.weights.bin" 2>/dev/null; } | sha256sum | cut -c1-12)
    echo "${sp:-?} ${s:-?} $h"
}

hdr=$(printf "| %-22s | %-8s | %9s | %9s | %8s | %8s | %-4s |" model mode "full x" "pruned x" "full s" "pruned s" same)
sep="|$(printf -- '-%.0s' $(seq 1 24))|----------|-----------|-----------|----------|----------|------|"
rows=""
diffs=0
sum_full=0
sum_pruned=0
echo "$hdr"
for m in $models; do
    for mode in default minimal eqsat; do
        f=$(run "$m" "$mode" "$FULL" full) || exit 1
        p=$(run "$m" "$mode" "$PRUNED" pruned) || exit 1
        read -r fsp fs fh <<<"$f"
        read -r psp ps ph <<<"$p"
        same=yes
        [ "$fh" != "$ph" ] && { same=no; diffs=$((diffs + 1)); }
        row=$(printf "| %-22s | %-8s | %9s | %9s | %8s | %8s | %-4s |" "$m" "$mode" "$fsp" "$psp" "$fs" "$ps" "$same")
        echo "$row"
        rows="$rows$row"$'\n'
        sum_full=$(awk -v a="$sum_full" -v b="$fs" 'BEGIN { printf "%.2f", a + b }')
        sum_pruned=$(awk -v a="$sum_pruned" -v b="$ps" 'BEGIN { printf "%.2f", a + b }')
    done
done
echo "results that differ: $diffs; search time of all runs: full $sum_full s, pruned $sum_pruned s"
{
    echo
    echo "## $(date -u +%Y-%m-%d) $(basename "$FULL") ($(grep -c '"id"' "$FULL") rules) vs $(basename "$PRUNED") ($(grep -c '"id"' "$PRUNED") rules)"
    echo
    echo "Machine: $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg); $("$TASC" --version 2>&1 | head -1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Command: \`bench/rules/prune_compare.sh $TASC $FULL $PRUNED\`; speedups are predicted (analytic cost model),"
    echo "\"same\": the optimized graphs are identical (JSON and folded weights hashed, the sidecar's name masked)."
    echo
    echo "$hdr"
    echo "$sep"
    printf "%s" "$rows"
    echo
    echo "Results that differ: $diffs of $(($(echo $models | wc -w) * 3)). Search time of all runs: full $sum_full s, pruned $sum_pruned s."
} >>"$OUT_MD"
