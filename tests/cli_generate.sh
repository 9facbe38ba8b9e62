#!/usr/bin/env bash
# cli_generate.sh TASC: `tasc generate` end to end: help, command-line errors (one line, exit 2),
# an unwritable output (exit 1, nothing left behind), a small run whose summary and file are
# checked, and the same bytes with 1 and 2 threads. Skipped (77) while the binary lacks the command.
set -u
tasc=${1:?usage: cli_generate.sh TASC}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
. "$(dirname "$0")/lib_cli.sh" # check DESCRIPTION CONDITION...

"$tasc" generate --help >"$dir/help" 2>"$dir/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "unknown command" "$dir/err"; then
    echo "skip: this tasc has no generate command"
    exit 77
fi
check "--help exits 0" test $rc -eq 0
check "--help shows usage" grep -q "usage: tasc generate --max-ops N" "$dir/help"

expect_usage() { # expect_usage MESSAGE ARGS...: exit 2 and one line naming the problem
    local msg=$1
    shift
    "$tasc" generate "$@" >/dev/null 2>"$dir/err"
    local rc=$?
    check "generate $* exits 2" test $rc -eq 2
    check "generate $* says '$msg'" grep -q -- "$msg" "$dir/err"
    check "generate $* writes one line" test "$(wc -l <"$dir/err")" -eq 1
}
expect_usage "missing --out" --max-ops 2
expect_usage "missing --max-ops" --out "$dir/x.json"
expect_usage "bad value for --max-ops" --max-ops 9 --out "$dir/x.json"
expect_usage "bad value for --threads" --max-ops 1 --threads 0 --out "$dir/x.json"
expect_usage "unknown op 'bogus'" --max-ops 1 --ops matmul,bogus --out "$dir/x.json"
expect_usage "not in the generation op set" --max-ops 1 --ops softmax --out "$dir/x.json"
expect_usage "unknown option" --max-ops 1 --colour --out "$dir/x.json"

"$tasc" generate --max-ops 1 --out "$dir/missing/x.json" >/dev/null 2>"$dir/err"
check "unwritable output exits 1" test $? -eq 1
check "unwritable output names the file" grep -q "$dir/missing/x.json" "$dir/err"

ops=ewadd,matmul,transpose,relu
"$tasc" generate --max-ops 2 --ops $ops --threads 1 --out "$dir/a.json" >"$dir/out" 2>"$dir/err"
check "2-op run exits 0" test $? -eq 0
check "summary: graphs enumerated" grep -Eq "graphs enumerated +917$" "$dir/out"
check "summary: candidate pairs" grep -Eq "candidate pairs +55$" "$dir/out"
check "summary: peak memory" grep -q "peak memory" "$dir/out"
check "file: format line names the command" \
    grep -q '^{"format": "tasc-rules", "version": 1, "generator": "tasc generate --max-ops 2 --ops ewadd,matmul,transpose,relu",' "$dir/a.json"
check "file: T(T(x)) = x is a rule" \
    grep -q '"src":\[{"op":"transpose","params":{"perm":\[1,0\]},"inputs":\["x0"\]},{"op":"transpose","params":{"perm":\[1,0\]},"inputs":\["%0"\]}\],"dst":\[\],"outputs":\[{"src":"%1","dst":"x0"}\]' "$dir/a.json"
check "no progress bar when stderr is not a terminal" test ! -s "$dir/err"
"$tasc" generate --max-ops 2 --ops $ops --threads 2 --out "$dir/b.json" >/dev/null 2>&1
check "same bytes with 1 and 2 threads" cmp -s "$dir/a.json" "$dir/b.json"
check "no temporary files left" test "$(ls "$dir" | grep -c tmp)" -eq 0
exit $fail
