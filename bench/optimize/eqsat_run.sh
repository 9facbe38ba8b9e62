#!/usr/bin/env bash
# eqsat_run.sh TASC OUTDIR: backtracking vs equality saturation (`tasc optimize --search`) on the
# zoo (models/*.json) and the shared ONNX models (../shared/models/onnx/*.onnx, --random-weights),
# with the default built-ins and with --builtins minimal, shipped rules, analytic cost model.
# Backtracking runs skip the numerical check (its results are bench/optimize/results.md's); eqsat
# runs are checked. Per run OUTDIR keeps the summary (.out), the progress lines (.err) and the
# process's user/system CPU seconds (.time); bench/optimize/eqsat_table.py turns them into the
# table of bench/optimize/eqsat.md. Runs one at a time (a 2-core machine). The optimized graphs'
# weights are deleted after each run unless EQSAT_KEEP_WEIGHTS=1.
set -u
TASC=${1:?usage: eqsat_run.sh TASC OUTDIR}
OUT=${2:?usage: eqsat_run.sh TASC OUTDIR}
mkdir -p "$OUT"
models=(models/*.json)
for f in ../shared/models/onnx/*.onnx /work/shared/models/onnx/*.onnx; do
    [ -f "$f" ] && models+=("$f")
done
seen=""
for m in "${models[@]}"; do
    name=$(basename "$m")
    case " $seen " in *" $name "*) continue ;; esac
    seen="$seen $name"
    extra=()
    case "$m" in *.onnx) extra=(--random-weights) ;; esac
    for b in all minimal; do
        for s in backtrack eqsat; do
            tag="$OUT/${name}.$b.$s"
            check=(--no-check)
            [ "$s" = eqsat ] && check=()
            uptime >"$tag.load"
            /usr/bin/time -f "%U %S" -o "$tag.time" "$TASC" optimize "$m" "${extra[@]}" --out "$tag.opt.json" \
                --search "$s" --builtins "$b" "${check[@]}" >"$tag.out" 2>"$tag.err"
            rc=$?
            # the table needs none of the optimized weights (tens of MB a run; 44 runs filled the
            # shared disk): kept only with EQSAT_KEEP_WEIGHTS=1
            [ "${EQSAT_KEEP_WEIGHTS:-0}" = 1 ] || rm -f "$tag.opt.weights.bin"
            echo "$name $b $s rc=$rc $(grep -m1 'predicted speedup' "$tag.out")"
        done
    done
done
