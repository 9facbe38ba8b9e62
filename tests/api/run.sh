#!/usr/bin/env bash
# run.sh CMAKE BUILD_DIR CC: the installed library as a user gets it (ctest's api_install).
#   1. cmake --install BUILD_DIR --prefix P (a temporary folder): the files are there, libtasc.so
#      has its SONAME and exports only tasc_* symbols;
#   2. tests/api/test_api.c compiled with `pkg-config --cflags --libs tasc` (PKG_CONFIG_PATH=P's)
#      and run on ../shared/models/onnx (load, optimize, run against the onnxruntime references,
#      every error path);
#   3. the same program linked statically (libtasc.a + `pkg-config --static`), and through CMake's
#      find_package(tasc) (tests/api/consumer), each run with --quick.
# TASC_API_CFLAGS: extra compiler flags (the sanitizer build's). Runs from the repository root.
# Exit 77 (skipped) when the shared models are missing and everything else passed.
set -u
CMAKE=${1:?usage: run.sh CMAKE BUILD_DIR CC}
BUILD=${2:?usage: run.sh CMAKE BUILD_DIR CC}
CC=${3:?usage: run.sh CMAKE BUILD_DIR CC}
CFLAGS_EXTRA=${TASC_API_CFLAGS:-}
T=$(mktemp -d /tmp/tasc-api-XXXXXX)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

if ! "$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1; then
    cat "$T/install.log"
    echo "FAIL cmake --install $BUILD --prefix $P"
    exit 1
fi
ok "cmake --install --prefix $P"
LIBDIR=$(ls -d "$P"/lib "$P"/lib64 "$P"/lib/*-linux-gnu 2>/dev/null | while read -r d; do
    [ -f "$d/pkgconfig/tasc.pc" ] && echo "$d"; done | head -1)
if [ -z "$LIBDIR" ]; then
    find "$P" -type f | sed 's/^/  /'
    echo "FAIL no lib*/pkgconfig/tasc.pc under $P"
    exit 1
fi
for f in "$P/include/tasc.h" "$LIBDIR/libtasc.so" "$LIBDIR/libtasc.a" "$LIBDIR/cmake/tasc/tascConfig.cmake" \
         "$LIBDIR/cmake/tasc/tascConfigVersion.cmake" "$P/bin/tasc"; do
    [ -e "$f" ] && ok "installed ${f#"$P"/}" || bad "missing ${f#"$P"/}"
done
soname=$(readelf -d "$LIBDIR/libtasc.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libtasc\.so\.[0-9]+$ ]] && [ -e "$LIBDIR/$soname" ] && ok "SONAME $soname" || bad "SONAME '$soname'"
others=$(nm -D --defined-only "$LIBDIR/libtasc.so" | awk '$3 !~ /^tasc_/ {print $3}' | grep -v '^_\(init\|fini\)$' || true)
n_api=$(nm -D --defined-only "$LIBDIR/libtasc.so" | awk '$3 ~ /^tasc_/' | wc -l)
[ -z "$others" ] && [ "$n_api" -gt 40 ] && ok "libtasc.so exports $n_api symbols, all tasc_*" ||
    bad "libtasc.so exports more than tasc_*: $(echo $others | head -c 300)"
if grep -rlq '#include "' "$P/include/tasc.h"; then bad "tasc.h includes a private header"; fi

export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
if ! pkg-config --exists tasc; then
    bad "pkg-config does not find tasc"
    exit 1
fi
v=$(pkg-config --modversion tasc)
[ "$v" = "$("$P/bin/tasc" --version 2>/dev/null | awk '{print $NF}')" ] && ok "tasc.pc version $v, as tasc --version" ||
    bad "tasc.pc version $v is not tasc --version's"
# shellcheck disable=SC2046,SC2086
if $CC -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L $CFLAGS_EXTRA $(pkg-config --cflags tasc) \
       tests/api/test_api.c -o "$T/test_api" $(pkg-config --libs tasc) -lm \
       -Wl,-rpath,"$(pkg-config --variable=libdir tasc)" 2>"$T/cc.log"; then
    ok "test_api.c built with pkg-config --cflags --libs tasc"
else
    cat "$T/cc.log"
    bad "test_api.c does not build against the installed tasc.h and libtasc.so"
fi
static_libs=$(pkg-config --static --libs tasc)
static_libs=${static_libs/-ltasc/$(pkg-config --variable=libdir tasc)/libtasc.a}
# shellcheck disable=SC2086
if $CC -std=c11 -D_POSIX_C_SOURCE=200809L $CFLAGS_EXTRA $(pkg-config --cflags tasc) tests/api/test_api.c \
       -o "$T/test_api_static" $static_libs -lm 2>"$T/cc-static.log"; then
    ok "test_api.c linked statically: libtasc.a $(pkg-config --static --libs-only-l tasc | sed 's/-ltasc //')"
    ldd "$T/test_api_static" | grep -q libtasc && bad "the static build still needs libtasc.so"
    "$T/test_api_static" --quick >"$T/static.log" 2>&1 && ok "static test_api --quick: $(tail -1 "$T/static.log")" ||
        { cat "$T/static.log"; bad "static test_api --quick"; }
else
    cat "$T/cc-static.log"
    bad "test_api.c does not link against libtasc.a"
fi
if "$CMAKE" -S tests/api/consumer -B "$T/consumer" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
       -DCMAKE_C_FLAGS="$CFLAGS_EXTRA" >"$T/consumer.log" 2>&1 &&
   "$CMAKE" --build "$T/consumer" >>"$T/consumer.log" 2>&1; then
    ok "find_package(tasc) and tasc::tasc (tests/api/consumer)"
    "$T/consumer/test_api_cmake" --quick >"$T/cmake.log" 2>&1 && ok "CMake-built test_api --quick: $(tail -1 "$T/cmake.log")" ||
        { cat "$T/cmake.log"; bad "CMake-built test_api --quick"; }
else
    tail -20 "$T/consumer.log"
    bad "tests/api/consumer does not build with find_package(tasc)"
fi

rc=1
if [ -x "$T/test_api" ]; then
    "$T/test_api" ../shared/models/onnx
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || bad "test_api exited $rc"
fi
echo "api_install: $fails failed"
[ $fails -eq 0 ] || exit 1
exit $rc
