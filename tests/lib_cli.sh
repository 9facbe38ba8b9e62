# lib_cli.sh: helpers shared by the CLI tests (sourced, not a test itself: the CTest glob takes
# tests/cli_*.sh only). The caller sets fail=0; expect() also needs TASC (the binary) and tmp
# (a scratch folder).

# expect CODE PATTERN ARGS...: `tasc ARGS` exits with CODE and, unless PATTERN is empty, writes
# exactly one line to stderr matching PATTERN (grep basic regex). A mismatch prints FAIL and sets
# fail=1.
expect() {
    local code=$1 pat=$2
    shift 2
    "$TASC" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" != "$code" ]; then
        echo "FAIL: tasc $* exited $rc, expected $code; stderr: $(cat "$tmp/err")"
        fail=1
        return
    fi
    if [ -n "$pat" ]; then
        if [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q -- "$pat" "$tmp/err"; then
            echo "FAIL: tasc $*: stderr is not one line matching '$pat': $(cat "$tmp/err")"
            fail=1
        fi
    fi
}

# check DESCRIPTION COMMAND...: run COMMAND; print "ok: DESCRIPTION" if it succeeds, else
# "FAIL: DESCRIPTION" and set fail=1.
check() {
    local what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
