#!/usr/bin/env bash
# cli_optimize.sh TASC: `tasc optimize` end to end. A zoo model optimized with the hand-written
# rules of tests/data/opt/ is cheaper, passes the numerical check, is written with its sidecar,
# runs, is byte-identical when made again, and --dot marks the rewritten nodes. A false rule
# (relu(x) = x) fails the check: exit 1, one line, nothing written. Without --rules the default
# rule set is used ($TASC_RULES, else the shipped rules/verified-4.json); --rules none: none.
# --search eqsat gives the same cost, checked and byte-identical run to run. The default set and the
# full 4-op set it is pruned from give the same graph on squeezenet.
# Bad command lines exit 2, bad files exit 1, each with one line on stderr. Skipped (77) while
# the tasc binary does not list `optimize` (src/main.c).
set -u
TASC=${1:?usage: cli_optimize.sh TASC}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$TASC" --help 2>/dev/null | grep -q "^  optimize "; then
    echo "SKIPPED: this tasc has no optimize command"
    exit 77
fi

. "$(dirname "$0")/lib_cli.sh" # expect CODE PATTERN ARGS...

R=tests/data/opt/rules_small.json
expect 0 "" optimize --help
grep -q "usage: tasc optimize MODEL" "$tmp/out" || { echo "FAIL: optimize --help prints no usage"; fail=1; }
"$TASC" model squeezenet --out "$tmp/sq.json" || { echo "FAIL: tasc model squeezenet"; exit 1; }

# the main job: cheaper, checked, written, runnable, deterministic
mkdir -p "$tmp/a" "$tmp/b"
expect 0 "" optimize "$tmp/sq.json" --rules $R --out "$tmp/a/o.json" --quiet
cp "$tmp/out" "$tmp/summary"
grep -q "predicted speedup" "$tmp/summary" || { echo "FAIL: no predicted speedup in the summary"; fail=1; }
grep -q "^check: passed" "$tmp/summary" || { echo "FAIL: the check did not pass: $(cat "$tmp/summary")"; fail=1; }
grep -Eq "^  flatten +rel L2 [0-9.e+-]+  max abs" "$tmp/summary" || { echo "FAIL: no per-output check line"; fail=1; }
before=$(sed -n 's/^cost: \([0-9.]*\) us -> \([0-9.]*\) us.*/\1/p' "$tmp/summary")
after=$(sed -n 's/^cost: \([0-9.]*\) us -> \([0-9.]*\) us.*/\2/p' "$tmp/summary")
if [ -z "$before" ] || ! awk -v a="$after" -v b="$before" 'BEGIN { exit !(a < b) }'; then
    echo "FAIL: cost did not go down ('$before' -> '$after')"
    fail=1
fi
grep -q "^  fuse-act " "$tmp/summary" || { echo "FAIL: no fuse-act in the rewrites applied"; fail=1; }
[ -s "$tmp/a/o.json" ] && [ -s "$tmp/a/o.weights.bin" ] || { echo "FAIL: output or sidecar missing"; fail=1; }
expect 0 "" run "$tmp/a/o.json" --seed 1
expect 0 "" optimize "$tmp/sq.json" --rules $R --out "$tmp/b/o.json" --quiet --no-check
grep -q "^check: skipped" "$tmp/out" || { echo "FAIL: --no-check still checked"; fail=1; }
cmp -s "$tmp/a/o.json" "$tmp/b/o.json" || { echo "FAIL: two runs wrote different JSON"; fail=1; }
cmp -s "$tmp/a/o.weights.bin" "$tmp/b/o.weights.bin" || { echo "FAIL: two runs wrote different weights"; fail=1; }
expect 0 "" optimize "$tmp/sq.json" --rules $R --out "$tmp/o5.json" --quiet --no-check --dot "$tmp/o5.dot"
grep -q "ffd27f" "$tmp/o5.dot" || { echo "FAIL: --dot marks no rewritten node"; fail=1; }
grep -q "^digraph" "$tmp/o5.dot" || { echo "FAIL: --dot wrote no DOT graph"; fail=1; }
expect 2 "bad value for --dot" optimize "$tmp/sq.json" --out "$tmp/x.json" --dot ""
# optimizing the optimized model again keeps working (its names already use the prefix)
expect 0 "" optimize "$tmp/a/o.json" --rules $R --out "$tmp/o3.json" --quiet
# built-in rewrites only, search options
expect 0 "" optimize "$tmp/sq.json" --rules none --out "$tmp/o4.json" --quiet --budget 5 --alpha 1.0 --time-limit 30 --seeds 1
grep -q "built-in rewrites only" "$tmp/out" || { echo "FAIL: no note about running without rules"; fail=1; }
expect 0 "" optimize "$tmp/sq.json" --no-rules --out "$tmp/o4.json" --quiet --budget 5 --no-check
grep -q "^rules: (none: built-in rewrites only)" "$tmp/out" || { echo "FAIL: --no-rules still used rules"; fail=1; }

# the default rule set: $TASC_RULES, else the shipped rules/verified-4.json of the source tree
TASC_RULES=$R expect 0 "" optimize tests/data/opt/mlp.json --out "$tmp/d1.json" --quiet --no-check
grep -q "^rules: $R (default)" "$tmp/out" || { echo "FAIL: \$TASC_RULES not used: $(head -3 "$tmp/out")"; fail=1; }
grep -q "^  $(grep -c '"id":' $R) rules" "$tmp/out" || { echo "FAIL: \$TASC_RULES: wrong rule count"; fail=1; }
TASC_RULES=none expect 0 "" optimize tests/data/opt/mlp.json --out "$tmp/d2.json" --quiet --no-check
grep -q "built-in rewrites only" "$tmp/out" || { echo "FAIL: TASC_RULES=none still used rules"; fail=1; }
TASC_RULES="$tmp/missing.json" expect 1 "missing.json: No such file" optimize tests/data/opt/mlp.json --out "$tmp/d3.json"
[ ! -e "$tmp/d3.json" ] || { echo "FAIL: output written without its rule file"; fail=1; }
expect 2 "bad value for --rules" optimize tests/data/opt/mlp.json --rules "" --out "$tmp/d3.json"
if [ -f rules/verified-4.json ]; then
    (unset TASC_RULES; "$TASC" optimize tests/data/opt/mlp.json --out "$tmp/d4.json" --quiet --budget 5 --no-check \
        >"$tmp/out" 2>"$tmp/err") || { echo "FAIL: the default rule set: $(cat "$tmp/err")"; fail=1; }
    grep -q "^rules: .*rules/verified-4.json (default)$" "$tmp/out" ||
        { echo "FAIL: the default is not the shipped set: $(head -3 "$tmp/out")"; fail=1; }
    grep -q "^  $(grep -c '"id":' rules/verified-4.json) rules$" "$tmp/out" ||
        { echo "FAIL: the shipped set not loaded whole: $(head -3 "$tmp/out")"; fail=1; }
fi

# the default set is the full 4-op one pruned by move (rules/README.md, "Derivable rules"): on
# squeezenet, with the default built-ins and rules only, both give the same graph, byte for byte
if [ -f rules/verified-4-full.json.xz ] && command -v xz >/dev/null; then
    xz -dc rules/verified-4-full.json.xz >"$tmp/full4.json"
    for mode in all minimal; do
        for set in rules/verified-4.json "$tmp/full4.json"; do
            d="$tmp/$mode-$(basename "$set" .json)"
            mkdir -p "$d"
            "$TASC" optimize "$tmp/sq.json" --rules "$set" --builtins $mode --no-check --out "$d/sq.json" --quiet \
                >/dev/null 2>"$tmp/err" || { echo "FAIL: optimize with $set ($mode): $(cat "$tmp/err")"; fail=1; }
        done
        cmp -s "$tmp/$mode-verified-4/sq.json" "$tmp/$mode-full4/sq.json" &&
            cmp -s "$tmp/$mode-verified-4/sq.weights.bin" "$tmp/$mode-full4/sq.weights.bin" ||
            { echo "FAIL: --builtins $mode: the default and the full 4-op set give different graphs"; fail=1; }
    done
fi

# a false rule: the check fails, nothing is written
expect 1 "numerical check failed" optimize tests/data/opt/mlp.json --rules tests/data/opt/rules_wrong.json \
    --out "$tmp/bad.json" --quiet
grep -q "^  wrong_relu_drop " "$tmp/out" || { echo "FAIL: the false rule was not applied: $(cat "$tmp/out")"; fail=1; }
grep -q "^check: FAILED" "$tmp/out" || { echo "FAIL: the summary does not say the check failed"; fail=1; }
[ ! -e "$tmp/bad.json" ] && [ ! -e "$tmp/bad.weights.bin" ] || { echo "FAIL: output written despite the failed check"; fail=1; }
ls "$tmp" | grep -q "bad.json.tmp" && { echo "FAIL: a temporary was left behind"; fail=1; }

# NaN where the original gives NaN too (sqrt of generated inputs below zero) is consistent: the
# check leaves those values out and passes (tests/cli_hostile.sh has the inconsistent case)
expect 0 "" optimize tests/data/cli/nan.json --rules none --out "$tmp/nan.json" --quiet
grep -q "^check: passed" "$tmp/out" || { echo "FAIL: NaN-consistent outputs did not pass: $(cat "$tmp/out")"; fail=1; }

# bad command lines: exit 2
expect 2 "missing --out" optimize "$tmp/sq.json" --rules $R
expect 2 "missing MODEL" optimize --out "$tmp/x.json"
expect 2 "bad value for --alpha" optimize "$tmp/sq.json" --out "$tmp/x.json" --alpha 0.5
expect 2 "bad value for --alpha" optimize "$tmp/sq.json" --out "$tmp/x.json" --alpha abc
expect 2 "bad value for --budget" optimize "$tmp/sq.json" --out "$tmp/x.json" --budget -1
expect 2 "bad value for --time-limit" optimize "$tmp/sq.json" --out "$tmp/x.json" --time-limit nan
expect 2 "bad value for --cost" optimize "$tmp/sq.json" --out "$tmp/x.json" --cost guess
expect 2 "bad value for --seeds" optimize "$tmp/sq.json" --out "$tmp/x.json" --seeds 0
expect 2 "unknown option" optimize "$tmp/sq.json" --out "$tmp/x.json" --fast
expect 2 "needs a value" optimize "$tmp/sq.json" --out
expect 2 "unexpected argument" optimize "$tmp/sq.json" "$tmp/sq.json" --out "$tmp/x.json"

# bad files: exit 1, the file named
expect 1 "nope.json" optimize "$tmp/nope.json" --out "$tmp/x.json"
echo '{"format": "tasc-rules", "version": 1, "rules": [{"id": "r"}]}' >"$tmp/badrules.json"
expect 1 "badrules.json" optimize "$tmp/sq.json" --rules "$tmp/badrules.json" --out "$tmp/x.json"
expect 1 "cycle.json" optimize tests/data/cli/cycle.json --rules none --out "$tmp/x.json"
expect 1 "" optimize "$tmp/sq.json" --rules none --out "$tmp/no/such/dir/x.json" --quiet --no-check
[ ! -e "$tmp/x.json" ] || { echo "FAIL: output written for a failed command"; fail=1; }

# --stats: rule usage as JSON, keys in a fixed order, the applied counts those of the summary
expect 0 "" optimize "$tmp/sq.json" --rules $R --out "$tmp/s1.json" --quiet --no-check --stats "$tmp/st.json"
grep -q "wrote: $tmp/st.json (rule usage statistics)" "$tmp/out" || { echo "FAIL: --stats not reported"; fail=1; }
python3 - "$tmp/st.json" "$tmp/out" <<'PY' || { echo "FAIL: --stats JSON"; fail=1; }
import json, re, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
assert list(d) == ["model", "rules", "n_rules", "cost_before_us", "cost_after_us", "search_seconds", "sources"], list(d)
for s in d["sources"]:
    assert list(s) == ["name", "dir", "found", "typechecked", "queued", "applied", "seconds"], list(s)
    assert s["typechecked"] <= s["found"] and s["queued"] <= s["typechecked"], s
summary = {}
for line in open(sys.argv[2]):
    m = re.match(r"  (\S+)\s+(\(dst->src\) )?(\d+)$", line)
    if m:
        summary[(m.group(1), "dst->src" if m.group(2) else "")] = int(m.group(3))
got = {(s["name"], "dst->src" if s["dir"] == "dst->src" else ""): s["applied"] for s in d["sources"] if s["applied"]}
assert got == summary, (got, summary)
PY
# --builtins minimal: no merge without a rule for it, but lowering fuses biases and activations
# after the search; a bad value is refused
expect 0 "" optimize "$tmp/sq.json" --rules none --builtins minimal --out "$tmp/s2.json" --quiet --no-check
grep -q "^built-ins: minimal" "$tmp/out" || { echo "FAIL: --builtins minimal not in the summary"; fail=1; }
grep -q "merge-conv\|split-concat" "$tmp/out" && { echo "FAIL: --builtins minimal merged"; fail=1; }
grep -q "^  fuse-act  " "$tmp/out" || { echo "FAIL: --builtins minimal did not lower (fuse-act)"; fail=1; }
# rules only: disconnected patterns (two relus of unrelated tensors) are not searched
expect 0 "" optimize "$tmp/sq.json" --builtins minimal --out "$tmp/s3.json" --quiet --no-check --budget 50 \
    --stats "$tmp/st3.json"
# (the rules are found by content, since ids move when the set is regenerated: those whose dst side
# is relu(a), relu(b) of two distinct variables, e.g. g4_00353: concat, relu, split on channels)
python3 - "$tmp/st3.json" rules/verified-4.json <<'PY' || { echo "FAIL: a disconnected pattern was searched"; fail=1; }
import json, sys
st, rs = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["rules"]
two_relus = {r["id"] for r in rs if [o["op"] for o in r["dst"]] == ["relu", "relu"] and
             len({o["inputs"][0] for o in r["dst"]}) == 2 and all(o["inputs"][0] in {v["name"] for v in r["vars"]} for o in r["dst"])}
assert two_relus, "no rule with two relus of distinct variables on one side"
searched = [s["name"] for s in st["sources"] if s["name"] in two_relus and s["dir"] == "dst->src"]
assert not searched, ("disconnected patterns searched", searched)
PY
expect 2 "bad value for --builtins" optimize "$tmp/sq.json" --out "$tmp/x.json" --builtins some
expect 2 "bad value for --stats" optimize "$tmp/sq.json" --out "$tmp/x.json" --stats ""

# tasc rules usage: the sums over models, as a table and as JSON
expect 0 "" rules usage --rules $R "$tmp/sq.json" tests/data/opt/mlp.json --json "$tmp/usage.json" --budget 20
grep -q "^rule  *dir  *found  *typechecked  *queued  *applied  *models  *seconds$" "$tmp/out" ||
    { echo "FAIL: rules usage prints no table"; fail=1; }
grep -q "^2 models, " "$tmp/out" || { echo "FAIL: rules usage: no totals line"; fail=1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['model']=='sum' and d['sources']" \
    "$tmp/usage.json" || { echo "FAIL: rules usage --json"; fail=1; }
expect 0 "" rules --help
grep -q "tasc rules usage --rules FILE MODEL" "$tmp/out" || { echo "FAIL: rules --help: no usage"; fail=1; }
expect 2 "needs --rules FILE" rules usage "$tmp/sq.json"
expect 2 "needs --rules FILE" rules usage --rules $R
expect 1 "nope.json" rules usage --rules $R "$tmp/nope.json"

# --search eqsat: equality saturation over the same rules; the same cost as backtracking here, the
# check passes, the summary names the extraction, the same bytes run to run; bad values refused
mkdir -p "$tmp/e1" "$tmp/e2"
for d in e1 e2; do
    expect 0 "" optimize "$tmp/sq.json" --rules $R --out "$tmp/$d/o.json" --quiet --search eqsat
    cp "$tmp/out" "$tmp/$d/summary"
done
grep -q "^check: passed" "$tmp/e1/summary" || { echo "FAIL: eqsat: the check did not pass"; fail=1; }
grep -Eq "^search: eqsat: [0-9]+ rounds.*e-nodes.*extraction: (greedy|greedy\+local|input\+local|exact \(z3\))" "$tmp/e1/summary" ||
    { echo "FAIL: eqsat: no search line naming the extraction: $(grep '^search' "$tmp/e1/summary")"; fail=1; }
cmp -s "$tmp/e1/o.json" "$tmp/e2/o.json" && cmp -s "$tmp/e1/o.weights.bin" "$tmp/e2/o.weights.bin" ||
    { echo "FAIL: eqsat: two runs wrote different files"; fail=1; }
bt=$(sed -n 's/^cost: .* -> \([0-9.]*\) us.*/\1/p' "$tmp/summary")
eq=$(sed -n 's/^cost: .* -> \([0-9.]*\) us.*/\1/p' "$tmp/e1/summary")
awk -v e="$eq" -v b="$bt" 'BEGIN { exit !(e != "" && e <= b * 1.0001) }' ||
    { echo "FAIL: eqsat costs more than backtracking ($eq vs $bt us)"; fail=1; }
expect 0 "" optimize --help
grep -q -- "--search KIND" "$tmp/out" && grep -q -- "--eqsat-nodes N" "$tmp/out" ||
    { echo "FAIL: optimize --help: no --search / --eqsat-nodes"; fail=1; }
expect 2 "bad value for --search" optimize "$tmp/sq.json" --out "$tmp/x.json" --search annealing
expect 2 "bad value for --eqsat-iters" optimize "$tmp/sq.json" --out "$tmp/x.json" --eqsat-iters 0

# the measured cost model needs the GPU runtime
"$TASC" optimize "$tmp/sq.json" --rules none --out "$tmp/m.json" --cost measured --quiet >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    echo "FAIL: --cost measured exited $rc (0 with a GPU, 3 without): $(cat "$tmp/err")"
    fail=1
fi

[ "$fail" = 0 ] && echo "cli_optimize: all passed"
exit "$fail"
