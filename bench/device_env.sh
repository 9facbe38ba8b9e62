# bench/device_env.sh: sourced by the GPU-machine scripts of bench/ (the caller sets ROOT, the
# repository root, and GPU, the CUDA build of tasc). Strict FP32 (TF32 off); the libraries carried
# in .device/rt/lib first, then the toolkit's, then cuDNN and cuBLAS from the PyTorch wheels where
# the toolkit lacks them; the shipped matmul tuning tables (bench/runtime/matmul_tune*.txt, keyed
# by device: bench/runtime/README.md) and a first-use tuning cache of this run (TASC_CACHE_DIR,
# default a fresh folder, so every run starts as a user's first one on that GPU). The same folder
# holds the run's convolution choice cache (conv-DEVICE.txt): the run's first process to meet a
# convolution measures its paths, the later ones run the same kernels.
export NVIDIA_TF32_OVERRIDE=0
export LD_LIBRARY_PATH="$ROOT/.device/rt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for lib in cudnn cublas; do
    if ldd "$GPU" | grep -q "lib$lib.*not found"; then
        d=$(python3 -c "import nvidia.$lib, os; print(os.path.join(list(nvidia.$lib.__path__)[0], 'lib'))" 2>/dev/null)
        [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    fi
done
export TASC_TUNE_DIR="$ROOT/bench/runtime"
export TASC_TUNE_TABLE="${TASC_TUNE_TABLE:-$(mktemp -d)/none.txt}" # no user table: not ~/.cache
export TASC_CACHE_DIR="${TASC_CACHE_DIR:-$(mktemp -d)}"

# device_prelude OUT: the run's first-use tuning cache in OUT/cache, the libraries carried in
# .device/lib (libz3, libjansson, libprotobuf-c, which the GPU machine lacks) and OUT/env.txt: the
# GPU, its driver and clocks, the binary's version.
device_prelude() {
    mkdir -p "$1/cache"
    export TASC_CACHE_DIR="$1/cache"
    export LD_LIBRARY_PATH="$ROOT/.device/lib:$LD_LIBRARY_PATH"
    { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; "$GPU" --version; } >"$1/env.txt" 2>&1
}
