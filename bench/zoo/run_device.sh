#!/usr/bin/env bash
# run_device.sh OUT [BATCHES] [PRECISIONS]: on the GPU machine, from the repository root -- the zoo
# at several batch sizes against PyTorch in one call (issue 17). Per zoo model and batch (default
# "1 8 32"): `tasc model --batch B`, `tasc optimize` with the shipped rules (analytic cost model),
# `tasc bench ORIGINAL OPTIMIZED` for each precision (default "fp32"; "fp32 3xtf32" adds the
# tensor-core mode; "fp32-measured" optimizes on the GPU with the measured cost model, `tasc bench
# --optimize --cost measured`), then bench/peers/torch_peer.py (eager and torch.compile with CUDA graphs) on
# the models PyTorch has, same batches, same GPU. The CPU agreement check runs at batch 1 only
# (--no-cpu above it: the two GPU graphs are still compared with each other). The matmul tables are
# the shipped ones (bench/device_env.sh); shapes they lack are tuned on first use into OUT/cache by
# an untimed first `tasc bench` of each model and batch (its tuning lines: OUT/firstuse.log), so the
# timed runs are a user's second run.
# Binary: .device/new/bin/tasc, libraries .device/lib. Writes OUT/env.txt, OUT/tasc.log,
# OUT/torch.log, OUT/torch.jsonl, OUT/tasc.tsv and OUT/zoo.md.
set -u
OUT=${1:?usage: bench/zoo/run_device.sh OUT [BATCHES] [PRECISIONS]}
BATCHES=${2:-1 8 32}
PRECS=${3:-fp32}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=$ROOT/.device/new/bin/tasc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS), tuning tables
device_prelude "$OUT"          # OUT/cache, .device/lib, OUT/env.txt
RULES=$ROOT/rules/verified-4.json
MODELS=${TASC_ZOO_MODELS:-resnet50 resnext50 inception_v3 squeezenet bert nasnet_a nasrnn}
: >"$OUT/tasc.log"
: >"$OUT/firstuse.log"
printf 'model\tbatch\tprecision\toriginal_ms\toptimized_ms\tspeedup\n' >"$OUT/tasc.tsv"
for b in $BATCHES; do
    cpu=--no-cpu
    [ "$b" = 1 ] && cpu=
    for m in $MODELS; do
        "$GPU" model "$m" --batch "$b" --out "$TMP/$m.json" >/dev/null || continue
        "$GPU" optimize "$TMP/$m.json" --rules "$RULES" --out "$TMP/$m.opt.json" --no-check --quiet \
            >>"$OUT/tasc.log" 2>&1 || continue
        echo "== $m batch $b" >>"$OUT/firstuse.log"
        ( time timeout 150 "$GPU" bench "$TMP/$m.json" "$TMP/$m.opt.json" --reps 5 --warmup 1 --no-cpu ) 2>&1 |
            grep -E "tuned|heuristic|real" >>"$OUT/firstuse.log"
        for p in $PRECS; do
            parg="$TMP/$m.opt.json"
            case $p in
            fp32) ;;
            fp32-measured) parg="--optimize --rules $RULES --cost measured" ;;
            *) parg="$parg --precision $p" ;;
            esac
            echo "== $m batch $b $p" >>"$OUT/tasc.log"
            timeout 300 "$GPU" bench "$TMP/$m.json" $parg --reps 200 $cpu \
                --json "$TMP/r.json" >>"$OUT/tasc.log" 2>&1
            echo "exit $?" >>"$OUT/tasc.log"
            ms=$(tr -d '\n' <"$TMP/r.json" 2>/dev/null | grep -o '"median_ms": *[0-9.]*' | sed 's/.*: *//' | tr '\n' ' ')
            sp=$(tr -d '\n' <"$TMP/r.json" 2>/dev/null | sed -n 's/.*"speedup": *\([0-9.]*\).*/\1/p')
            set -- $ms
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$b" "$p" "${1:-?}" "${2:-?}" "${sp:-?}" | tee -a "$OUT/tasc.tsv"
            rm -f "$TMP/r.json"
        done
    done
done
TM=$(echo "$MODELS" | tr ' ' '\n' | grep -E '^(resnet50|resnext50|inception_v3|squeezenet|bert)$' | paste -sd,)
: >"$OUT/torch.jsonl"
[ -n "$TM" ] && timeout ${TASC_TORCH_TIMEOUT:-400} python3 "$ROOT/bench/peers/torch_peer.py" --models "$TM" \
    --batches "$(echo $BATCHES | tr ' ' ,)" --modes ${TASC_TORCH_MODES:-cudagraphs} --reps 100 \
    --json "$OUT/torch.jsonl" >"$OUT/torch.log" 2>&1
python3 "$ROOT/bench/zoo/table.py" "$OUT/tasc.tsv" "$OUT/torch.jsonl" "$OUT/env.txt" | tee "$OUT/zoo.md"
