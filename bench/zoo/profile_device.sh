#!/usr/bin/env bash
# profile_device.sh OUT [MODEL] [BATCHES]: on the GPU machine, from the repository root -- why tasc
# is behind PyTorch where it is (issue 17: a missed target is named with the profile that explains
# it). Per batch (default "8 32") of MODEL (default bert): `tasc model`, `tasc optimize` (shipped
# rules) and `--rules none`, an untimed first bench that tunes what the tables lack (first use),
# then `tasc bench ORIGINAL OPTIMIZED --profile` (time per op type, slowest nodes) and
# bench/peers/torch_profile.py (PyTorch's kernels under torch.compile with CUDA graphs) on the same
# GPU in the same call. Binary: .device/new/bin/tasc, libraries .device/lib.
# Writes OUT/env.txt, OUT/tasc-MODEL-bB.log, OUT/torch-MODEL-bB.log.
set -u
OUT=${1:?usage: bench/zoo/profile_device.sh OUT [MODEL] [BATCHES]}
MODEL=${2:-bert}
BATCHES=${3:-8 32}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU=$ROOT/.device/new/bin/tasc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS), tuning tables
device_prelude "$OUT"          # OUT/cache, .device/lib, OUT/env.txt
for b in $BATCHES; do
    L=$OUT/tasc-$MODEL-b$b.log
    "$GPU" model "$MODEL" --batch "$b" --out "$TMP/m.json" >/dev/null || continue
    "$GPU" optimize "$TMP/m.json" --rules "$ROOT/rules/verified-4.json" --out "$TMP/opt.json" --no-check >"$L" 2>&1
    "$GPU" optimize "$TMP/m.json" --rules none --out "$TMP/none.json" --no-check >>"$L" 2>&1
    { echo "== first use (tunes)"; timeout 200 "$GPU" bench "$TMP/m.json" "$TMP/opt.json" --reps 5 --warmup 1 --no-cpu 2>&1 | grep -E "tuned|heuristic"; } >>"$L"
    echo "== original vs optimized (shipped rules), profiled" >>"$L"
    timeout 150 "$GPU" bench "$TMP/m.json" "$TMP/opt.json" --reps 200 --no-cpu --profile >>"$L" 2>&1
    echo "== original vs built-ins only (--rules none)" >>"$L"
    timeout 150 "$GPU" bench "$TMP/m.json" "$TMP/none.json" --reps 200 --no-cpu >>"$L" 2>&1
    [ -f "$ROOT/bench/peers/torch_peer.py" ] || continue
    case $MODEL in resnet50|resnext50|inception_v3|squeezenet|bert)
        timeout 300 python3 "$ROOT/bench/peers/torch_profile.py" --model "$MODEL" --batch "$b" --top 20 \
            >"$OUT/torch-$MODEL-b$b.log" 2>&1 ;;
    esac
done
