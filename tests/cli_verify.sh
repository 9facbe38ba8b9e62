#!/usr/bin/env bash
# cli_verify.sh TASC: `tasc verify`, `tasc axioms`, `tasc rules export` and `tasc rules prune`
# end to end: help,
# command-line errors (one line, exit 2), bad and missing files (exit 1 / 3), the hand-written
# true rules all proved and the planted wrong ones all quarantined with reasons, --require-all,
# the cache (a second run takes everything from it and writes the same bytes), the same bytes with
# 1 and 2 threads, the egg export, and `tasc axioms check` on small shapes. Skipped (77) while the
# binary lacks the commands. Run from the source tree (CTest does).
set -u
tasc=${1:?usage: cli_verify.sh TASC}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
. "$(dirname "$0")/lib_cli.sh" # check DESCRIPTION CONDITION...

"$tasc" verify --help >"$dir/help" 2>"$dir/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "unknown command" "$dir/err"; then
    echo "skip: this tasc has no verify command"
    exit 77
fi
check "verify --help exits 0" test $rc -eq 0
check "verify --help shows usage" grep -q "usage: tasc verify CANDIDATES --out RULES" "$dir/help"
"$tasc" axioms --help >"$dir/help" 2>&1
check "axioms --help" grep -q "usage: tasc axioms check" "$dir/help"
"$tasc" rules --help >"$dir/help" 2>&1
check "rules --help" grep -q "usage: tasc rules export --egg" "$dir/help"

T=tests/data/verify/true.json
P=tests/data/verify/planted.json

expect() { # expect CODE MESSAGE CMD ARGS...: the exit code and one line naming the problem
    local code=$1 msg=$2
    shift 2
    "$tasc" "$@" >/dev/null 2>"$dir/err"
    local rc=$?
    check "$* exits $code" test $rc -eq "$code"
    check "$* says '$msg'" grep -q -- "$msg" "$dir/err"
    check "$* writes one line" test "$(wc -l <"$dir/err")" -eq 1
}
expect 2 "missing CANDIDATES" verify --out "$dir/o.json"
expect 2 "missing --out" verify "$T"
expect 2 "bad value for --timeout" verify "$T" --out "$dir/o.json" --timeout 0
expect 2 "bad value for --timeout" verify "$T" --out "$dir/o.json" --timeout abc
expect 2 "bad value for --threads" verify "$T" --out "$dir/o.json" --threads 0
expect 2 "unknown option" verify "$T" --out "$dir/o.json" --colour
expect 2 "unexpected argument" verify "$T" "$P" --out "$dir/o.json"
expect 2 "--cache and --no-cache" verify "$T" --out "$dir/o.json" --cache "$dir/c" --no-cache
expect 1 "no-such.json" verify "$dir/no-such.json" --out "$dir/o.json" --no-cache
expect 3 "nope.smt2" verify "$T" --out "$dir/o.json" --no-cache --axioms "$dir/nope.smt2"
printf '(assert (forall ((x T)) (= x x)))\n' >"$dir/bad.smt2"
expect 1 "bad.smt2" verify "$T" --out "$dir/o.json" --no-cache --axioms "$dir/bad.smt2"
printf 'not json' >"$dir/bad.json"
expect 1 "bad.json" verify "$dir/bad.json" --out "$dir/o.json" --no-cache
expect 1 "o.json" verify "$T" --out "$dir/no-such-dir/o.json" --no-cache
expect 2 "expected 'check' or 'list'" axioms frobnicate
expect 2 "bad value for --max-dim" axioms check --max-dim 9
expect 2 "missing the format" rules export "$T"
expect 1 "no-such.json" rules export --egg "$dir/no-such.json"
check "no output left behind by the failed runs" test ! -e "$dir/o.json"

# the true rules: all proved, each with the axioms of its proof
"$tasc" verify "$T" --out "$dir/true.json" --cache "$dir/cache" --require-all >"$dir/out" 2>"$dir/err"
check "true rules: exit 0" test $? -eq 0
check "true rules: summary" grep -q "11 of 11 candidates proved" "$dir/out"
check "true rules: proofs recorded" test "$(grep -c '"proof":{"status":"proved","time_s":[0-9.]*,"axioms":\["' "$dir/true.json")" -eq 11
"$tasc" verify "$dir/true.json" --out "$dir/true2.json" --no-cache --require-all >/dev/null 2>&1
check "true rules: the proved file loads again as candidates, all proved" test $? -eq 0
# the cache: nothing proved again, the same bytes
"$tasc" verify "$T" --out "$dir/true-again.json" --cache "$dir/cache" >"$dir/out" 2>&1
check "cache: everything from the cache" grep -Eq "from the cache +11" "$dir/out"
check "cache: the same bytes" cmp -s "$dir/true.json" "$dir/true-again.json"

# the planted wrong rules: none proved, all quarantined with a reason; --require-all fails
"$tasc" verify "$P" --out "$dir/p.json" --quarantine "$dir/q.json" --no-cache >"$dir/out" 2>&1
check "planted: exit 0" test $? -eq 0
check "planted: none proved" grep -q "0 of 6 candidates proved" "$dir/out"
check "planted: 6 quarantined" test "$(grep -c '"status":"refuted","reason":"counterexample' "$dir/q.json")" -eq 6
"$tasc" verify "$P" --out "$dir/p.json" --no-cache --no-numeric >/dev/null 2>&1
check "planted, Z3 alone: none proved" test "$(grep -c '"status":"proved"' "$dir/p.json")" -eq 0
check "planted, default quarantine name" test -s "$dir/p.quarantine.json"
"$tasc" verify "$P" --out "$dir/p.json" --no-cache --require-all >/dev/null 2>"$dir/err"
check "planted: --require-all exits 1" test $? -eq 1
check "planted: --require-all names the count" grep -q "6 of 6 candidates not proved" "$dir/err"

# the same bytes whatever the thread count (proof times aside)
"$tasc" verify rules/verified-3.json --out "$dir/t1.json" --no-cache --threads 1 >/dev/null 2>&1
"$tasc" verify rules/verified-3.json --out "$dir/t2.json" --no-cache --threads 2 >/dev/null 2>&1
sed 's/"time_s":[0-9.]*//g' "$dir/t1.json" >"$dir/t1s"
sed 's/"time_s":[0-9.]*//g' "$dir/t2.json" >"$dir/t2s"
check "threads 1 and 2: the same rules and proofs" cmp -s "$dir/t1s" "$dir/t2s"
check "shipped 3-op rules all proved again" test "$(grep -c '"status":"proved"' "$dir/t1.json")" -eq "$(grep -c '"id":' rules/verified-3.json)"

# tasc generate --verify: generation and verification in one step, through a cache
TASC_CACHE_DIR="$dir/gc" "$tasc" generate --max-ops 2 --verify --out "$dir/g2.json" >"$dir/out" 2>&1
check "generate --verify: exit 0" test $? -eq 0
check "generate --verify: every kept rule proved" test "$(grep -c '"status":"proved"' "$dir/g2.json")" -eq "$(grep -c '"id":' "$dir/g2.json")"
check "generate --verify: quarantine file" test -s "$dir/g2.quarantine.json"
check "generate --verify: recorded in the file" grep -q '"generator": "tasc generate --max-ops 2 --verify"' "$dir/g2.json"
TASC_CACHE_DIR="$dir/gc" "$tasc" generate --max-ops 2 --verify --out "$dir/g2b.json" >"$dir/out" 2>&1
check "generate --verify again: nothing proved again" grep -Eq "from the cache +[1-9]" "$dir/out"
check "generate --verify again: the same bytes" cmp -s "$dir/g2.json" "$dir/g2b.json"

# egg export
"$tasc" rules export --egg "$T" >"$dir/egg" 2>"$dir/err"
check "egg: exit 0" test $? -eq 0
check "egg: ewadd commutes" grep -qx "(ewadd ?x ?y)=>(ewadd ?y ?x)" "$dir/egg"
check "egg: one rewrite a line" test "$(grep -c '=>' "$dir/egg")" -eq "$(wc -l <"$dir/egg")"
"$tasc" rules export --egg "$T" --out "$dir/egg2" >/dev/null 2>&1
check "egg: --out writes the same" cmp -s "$dir/egg" "$dir/egg2"

# prune: the 3-op set loses the rules the rest derive; the kept set loads, counts "derived" as the
# list has lines, the sizes add up, the same bytes again; bad command lines and files
R3=rules/verified-3.json
"$tasc" rules prune --rules $R3 --out "$dir/p3.json" --list "$dir/p3.txt" >"$dir/out" 2>"$dir/err"
check "prune: exit 0" test $? -eq 0
check "prune: progress on stderr" grep -q "tasc rules prune: pass 1: [0-9]* of [0-9]* rules tried" "$dir/err"
n_all=$(grep -c '"id"' $R3)
n_kept=$(grep -c '"id"' "$dir/p3.json")
n_drop=$(wc -l <"$dir/p3.txt")
check "prune: some rules derived" test "$n_drop" -gt 100
check "prune: kept + derived = all" test $((n_kept + n_drop)) -eq "$n_all"
check "prune: the summary's total" grep -Eq "^all +$n_all +$n_drop +$n_kept\$" "$dir/out"
check "prune: the manifest count" grep -q "\"derived\": $n_drop" "$dir/p3.json"
check "prune: commutativity kept" grep -q '"id":"g3_00002"' "$dir/p3.json"
"$tasc" rules export --egg "$dir/p3.json" >/dev/null 2>&1
check "prune: the kept set loads" test $? -eq 0
"$tasc" rules prune --rules $R3 --out "$dir/p3b.json" >/dev/null 2>&1
check "prune: the same bytes again" cmp -s "$dir/p3.json" "$dir/p3b.json"
"$tasc" rules prune --rules $R3 --by move --out "$dir/p3m.json" --list "$dir/p3m.txt" >"$dir/out" 2>"$dir/err"
check "prune --by move: exit 0" test $? -eq 0
n_move=$(wc -l <"$dir/p3m.txt")
check "prune --by move: fewer than by rounds, some" test "$n_move" -gt 0 -a "$n_move" -lt "$n_drop"
check "prune --by move: the summary" grep -q "derived by one move in each direction searched" "$dir/out"
"$tasc" rules prune --rules "$dir/p3m.json" --by move --out "$dir/p3mm.json" >"$dir/out" 2>"$dir/err"
check "prune --by move of its own output: nothing more (passes to a fixed point)" grep -Eq "^all +[0-9]+ +0 +[0-9]+\$" "$dir/out"
check "prune --by move of its own output: the same rules" \
    test "$(grep '"id"' "$dir/p3mm.json" | md5sum)" = "$(grep '"id"' "$dir/p3m.json" | md5sum)"
# the shipped default is exactly the full 4-op set pruned by move (verifier/ship_prune.sh), and the
# default's rules are proved (tests/test_verify.c), so the dropped ones are too: each is one move
# of a kept rule
xz -dc rules/verified-4-full.json.xz >"$dir/full4.json"
check "the full 4-op set: 21,983 rules" test "$(grep -c '"id"' "$dir/full4.json")" -eq 21983
"$tasc" rules prune --rules "$dir/full4.json" --by move --out "$dir/p4.json" >"$dir/out" 2>"$dir/err"
check "the default 4-op set is the full one pruned by move" cmp -s "$dir/p4.json" rules/verified-4.json
expect 2 "needs --rules FILE and --out FILE" rules prune --rules $R3
expect 2 "bad value for --iters" rules prune --rules $R3 --out "$dir/x.json" --iters 0
expect 2 "bad value for --by" rules prune --rules $R3 --out "$dir/x.json" --by magic
expect 1 "no-such.json" rules prune --rules "$dir/no-such.json" --out "$dir/x.json"
check "prune: nothing written on error" test ! -e "$dir/x.json"

# the axiom check on small shapes, and the list
"$tasc" axioms check --max-dim 2 --max-instances 100 --redundancy-timeout 1 >"$dir/out" 2>"$dir/err"
check "axioms check: exit 0" test $? -eq 0
check "axioms check: no failure" grep -q " 0 of [0-9]* axioms failed" "$dir/out"
check "axioms check: probes" grep -q "0 of [0-9]* probes proved" "$dir/out"
"$tasc" axioms list >"$dir/out" 2>&1
check "axioms list" grep -q "ewadd_comm .*commutative" "$dir/out"
printf '%s\n;; false\n(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) x) :pattern ((ewadd x y)))) :named absorb))\n' \
    "$(cat verifier/axioms.smt2)" >"$dir/false.smt2"
"$tasc" axioms check --axioms "$dir/false.smt2" --max-dim 2 --max-instances 20 --no-redundancy >"$dir/out" 2>"$dir/err"
check "a false axiom: exit 1" test $? -eq 1
check "a false axiom: reported" grep -q "absorb .*FAIL" "$dir/out"
check "a false axiom: the probe proves a false equality" grep -q "ewadd(x,y) = x .*FAIL" "$dir/out"

# the ill-shaped pass (issue 15): the shipped axioms pass it; an identity axiom without its size
# condition fails it; the issue's added axiom that builds matmul(I_n, I_n+1) proves nothing false
"$tasc" axioms --help >"$dir/help" 2>&1
check "axioms --help: --ill-shaped" grep -q -- "--ill-shaped N" "$dir/help"
"$tasc" axioms check --max-dim 2 --max-instances 20 --ill-shaped 50 --no-redundancy >"$dir/out" 2>"$dir/err"
check "ill-shaped pass: exit 0" test $? -eq 0
check "ill-shaped pass: none fail" grep -q "ill-shaped instantiations, [0-9]* excluded by side conditions; 0 of [0-9]* axioms failed them" "$dir/out"
sed 's/(=> (= (dim x 1) n) (= (matmul NONE x (const_imm n)) x))/(= (matmul NONE x (const_imm n)) x)/' \
    verifier/axioms.smt2 >"$dir/unguarded.smt2"
check "ill-shaped pass: the size condition taken out" test "$(grep -c 'matmul NONE x (const_imm n)) x) :pattern' "$dir/unguarded.smt2")" -eq 1
"$tasc" axioms check --axioms "$dir/unguarded.smt2" --max-dim 2 --max-instances 20 --ill-shaped 50 --no-redundancy \
    >"$dir/out" 2>"$dir/err"
check "ill-shaped pass, no size condition: exit 1" test $? -eq 1
check "ill-shaped pass, no size condition: reported" grep -q "matmul_imm_r .*FAIL (ill-shaped): .*the sides get dim 1" "$dir/out"
check "ill-shaped pass, no size condition: one axiom" grep -q "; 1 of [0-9]* axioms failed them" "$dir/out"
chain=';; relu keeps a product of identity matrices of sizes n and n+1 (ill shaped)
(assert (! (forall ((n Int)) (! (= (relu (matmul NONE (const_imm n) (const_imm (+ n 1)))) (matmul NONE (const_imm n) (const_imm (+ n 1)))) :pattern ((const_imm n)))) :named imm_chain))'
printf '%s\n%s\n' "$(cat verifier/axioms.smt2)" "$chain" >"$dir/chain.smt2"
sed 's/(=> (= (dim x 0) n) (= (matmul NONE (const_imm n) x) x))/(= (matmul NONE (const_imm n) x) x)/' "$dir/unguarded.smt2" \
    >"$dir/unguarded2.smt2"
printf '%s\n%s\n' "$(cat "$dir/unguarded2.smt2")" "$chain" >"$dir/chain-unguarded.smt2"
printf '%s' '{"format":"tasc-rules","version":1,"op_set":[],"max_ops":0,"counts":{},"rules":[{"id":"w_times_i",
"vars":[{"name":"w","shape":[3,3]}],"src":[{"op":"const_imm","params":{"n":3},"inputs":[]},{"op":"ewmul","inputs":["w","%0"]}],
"dst":[],"outputs":[{"src":"%1","dst":"w"}],"constraints":[{"side":"src","op":0,"param":"n","value":3,"equals":[["w",0],["w",1]]}]}]}' \
    >"$dir/wI.json"
"$tasc" verify "$dir/wI.json" --out "$dir/wI.out.json" --no-cache --no-numeric --axioms "$dir/chain.smt2" >"$dir/out" 2>&1
check "matmul(I_n, I_n+1): w * I = w not proved" grep -q "0 of 1 candidates proved" "$dir/out"
"$tasc" verify "$dir/wI.json" --out "$dir/wI.out.json" --no-cache --no-numeric --axioms "$dir/chain-unguarded.smt2" \
    >"$dir/out" 2>&1
check "matmul(I_n, I_n+1) without the size conditions: w * I = w proved (what they stop)" grep -q "1 of 1 candidates proved" "$dir/out"

exit $fail
