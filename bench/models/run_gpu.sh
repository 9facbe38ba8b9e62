#!/usr/bin/env bash
# run_gpu.sh OUT [GRAPHS] [TASC]: on the GPU machine, from the repository root -- the model corpus,
# tasc against PyTorch, all in one call (issue 16). GRAPHS (default .device/corpus) holds the
# graph-only files NAME.graph.onnx of bench/models/export.py (weights stripped: see
# bench/models/README.md for packing them); TASC is a CUDA build of tasc (default
# .device/new/bin/tasc; shared libraries from .device/lib). Per model found in GRAPHS, in corpus
# order (TASC_CORPUS_MODELS picks some):
#   tasc optimize NAME.graph.onnx --random-weights (shipped rules, analytic cost model; predicted
#     speedup), then tasc bench original against optimized (median of 200 CUDA-graph replays, FP32,
#     TF32 off; GPU outputs against the CPU executor), with --random-weights: seeded values by role;
#   then bench/models/torch_gpu.py: PyTorch builds the same network with random init (corpus.py)
#     and times eager, torch.compile and torch.compile(mode="reduce-overhead") (CUDA graphs).
# Writes OUT/env.txt, OUT/tasc.log, OUT/optimize/NAME.txt, OUT/bench/NAME.json, OUT/torch.log,
# OUT/torch.jsonl and the table OUT/results-gpu.md (bench/models/gpu_table.py), printed at the end.
# TASC_CORPUS_PROFILE=1 adds `tasc bench --profile` (per op type, slowest nodes) to OUT/tasc.log.
set -u
OUT=${1:?usage: bench/models/run_gpu.sh OUT [GRAPHS] [TASC]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GRAPHS=${2:-$ROOT/.device/corpus}
GPU=${3:-$ROOT/.device/new/bin/tasc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT/optimize" "$OUT/bench"
. "$ROOT/bench/device_env.sh" # TF32 off, LD_LIBRARY_PATH (cuDNN, cuBLAS), TASC_TUNE_TABLE
device_prelude "$OUT"          # OUT/cache, .device/lib, OUT/env.txt
{
    python3 -c "import torch, torchvision, transformers; print('torch', torch.__version__, 'torchvision', \
torchvision.__version__, 'transformers', transformers.__version__)"
} >>"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
ALL=$(python3 -c "import sys; sys.path.insert(0, '$ROOT/bench/models'); import corpus; print(' '.join(corpus.MODELS))")
MODELS=${TASC_CORPUS_MODELS:-$ALL}
RULES=$ROOT/rules/verified-4.json
PROFILE=${TASC_CORPUS_PROFILE:+--profile} # TASC_CORPUS_PROFILE=1: time per op type, slowest nodes
: >"$OUT/tasc.log"
found=
for m in $MODELS; do
    g=$GRAPHS/$m.graph.onnx
    if [ ! -f "$g" ]; then
        echo "== $m: $g missing, skipped" | tee -a "$OUT/tasc.log"
        continue
    fi
    found="$found,$m"
    echo "== $m" | tee -a "$OUT/tasc.log"
    # the optimizer's CPU check is left to tasc bench, which compares both GPU results with the CPU executor
    timeout 300 "$GPU" optimize "$g" --random-weights --rules "$RULES" --out "$TMP/$m.opt.json" --no-check \
        --quiet >"$OUT/optimize/$m.txt" 2>&1
    echo "optimize exit $?" | tee -a "$OUT/tasc.log"
    grep -E "^nodes:|predicted speedup" "$OUT/optimize/$m.txt" | tee -a "$OUT/tasc.log"
    if [ -f "$TMP/$m.opt.json" ]; then
        timeout 400 "$GPU" bench "$g" "$TMP/$m.opt.json" --random-weights --reps 200 $PROFILE \
            --json "$OUT/bench/$m.json" >>"$OUT/tasc.log" 2>&1
    else
        timeout 400 "$GPU" bench "$g" --random-weights --reps 200 --json "$OUT/bench/$m.json" >>"$OUT/tasc.log" 2>&1
    fi
    echo "bench exit $?" | tee -a "$OUT/tasc.log"
    grep -E "latency median|speedup|vs CPU" "$OUT/tasc.log" | tail -4
done
: >"$OUT/torch.jsonl"
if [ -n "$found" ]; then
    timeout ${TASC_TORCH_TIMEOUT:-1500} python3 "$ROOT/bench/models/torch_gpu.py" --models "${found#,}" \
        --reps 100 --json "$OUT/torch.jsonl" 2>&1 | tee "$OUT/torch.log"
fi
python3 "$ROOT/bench/models/gpu_table.py" "$OUT" | tee "$OUT/results-gpu.md"
