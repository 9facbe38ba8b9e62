#!/usr/bin/env bash
# smoke.sh BUILD: the fuzz harnesses' short run in the test suite (ctest fuzz_smoke). Configures
# a clang build with TASC_FUZZ=ON in BUILD (its own folder), builds the harnesses, makes the seed
# corpus (seeds.sh) and runs the four harnesses side by side for TASC_FUZZ_SECONDS each (default
# 60), inputs up to 4 MiB, with their dictionaries. Fails if a harness finds anything (the input
# is left in BUILD/findings/). Exit 77 (skipped) without clang or libFuzzer. Run from the
# repository root. Long runs: tests/fuzz/README.md.
set -u
BUILD=${1:?usage: smoke.sh BUILD}
SECONDS_EACH=${TASC_FUZZ_SECONDS:-60}
CC_FUZZ=${TASC_FUZZ_CC:-clang}
if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "SKIPPED: no $CC_FUZZ (Debian: apt-get install clang-14 libclang-rt-14-dev)"
    exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' \
    > "$probe/p.c"
if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "SKIPPED: $CC_FUZZ cannot link libFuzzer (Debian: apt-get install libclang-rt-14-dev)"
    exit 77
fi
JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DTASC_FUZZ=ON -DTASC_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD.configure.log" 2>&1 ||
    { echo "FAIL: configure (see $BUILD.configure.log)"; tail -20 "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" --target tasc_fuzz -j "$JOBS" >"$BUILD/build.log" 2>&1 ||
    { echo "FAIL: build (see $BUILD/build.log)"; tail -20 "$BUILD/build.log"; exit 1; }
rm -rf "$BUILD/seeds" "$BUILD/corpus" "$BUILD/findings"
bash tests/fuzz/seeds.sh "$BUILD/seeds" || exit 1
mkdir -p "$BUILD/findings"
pids=()
for h in json onnx rules npy; do
    mkdir -p "$BUILD/corpus/$h"
    "$BUILD/tests/fuzz/fuzz_$h" "$BUILD/corpus/$h" "$BUILD/seeds/$h" -dict=tests/fuzz/$h.dict \
        -max_total_time="$SECONDS_EACH" -max_len=4194304 -rss_limit_mb=4096 -timeout=60 \
        -artifact_prefix="$BUILD/findings/$h-" -print_final_stats=1 >"$BUILD/fuzz_$h.log" 2>&1 &
    pids+=($!)
done
fail=0
i=0
for h in json onnx rules npy; do
    wait "${pids[$i]}"
    rc=$?
    i=$((i + 1))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/fuzz_$h.log")
    if [ $rc -ne 0 ]; then
        echo "FAIL: fuzz_$h exited $rc after ${runs:-?} runs; the input is in $BUILD/findings/:"
        grep -m 5 -E "fuzz finding|ERROR:|runtime error|SUMMARY" "$BUILD/fuzz_$h.log"
        fail=1
    else
        echo "ok: fuzz_$h: ${runs:-?} runs in ${SECONDS_EACH} s, nothing found"
    fi
done
exit $fail
