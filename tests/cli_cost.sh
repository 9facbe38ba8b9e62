#!/usr/bin/env bash
# cli_cost.sh TASC: `tasc cost compare|fit` end to end on a sample of the H100 measurements
# (tests/data/cost/h100_sample.txt): help; the per-op table sums the measured times of the file;
# the fit lowers the error and gives the same bytes twice; `tasc optimize --cost-set` takes the
# constants; bad command lines (one line, exit 2) and bad files (FILE:LINE, exit 1).
# Run from the source tree (CTest does).
set -u
TASC=${1:?usage: cli_cost.sh TASC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$(dirname "$0")/lib_cli.sh" # expect CODE PATTERN ARGS..., check DESCRIPTION COMMAND...
S=tests/data/cost/h100_sample.txt

"$TASC" cost --help >"$tmp/help" 2>&1
check "cost --help" grep -q "usage: tasc cost compare CACHE" "$tmp/help"
check "cost --help lists the constants" grep -q "conv_min_us" "$tmp/help"

expect 0 "" cost compare "$S" --worst 3
cp "$tmp/out" "$tmp/compare"
n=$(grep -vc "^#" "$S")
# every line is a configuration, a constant or a wide concat (over 4 inputs) left out
read -r k c w < <(sed -n "s|^$S: \([0-9]*\) configurations of NVIDIA H100 80GB HBM3 (\([0-9]*\) constants and \([0-9]*\) with over 4 inputs left out)\$|\1 \2 \3|p" "$tmp/compare")
check "compare accounts for every line ($k + ${c:-?} + ${w:-?} = $n)" test "$((k + c + w))" -eq "$n"
# the 'all' row's measured sum is the sum of the kept lines' times
want=$(grep -v "^#" "$S" | awk -F'\t' 'split($2, parts, ";") <= 4 {s += $3} END {printf "%.1f", s}')
got=$(awk '$1 == "all" {print $3}' "$tmp/compare")
check "compare sums the measured times ($want = $got)" test "$want" = "$got"
check "compare lists 3 worst" test "$(grep -c "x  measured " "$tmp/compare")" -eq 3
check "compare gives the typical factor" grep -q "^typical factor between predicted and measured" "$tmp/compare"

expect 0 "" cost fit "$S"
cp "$tmp/out" "$tmp/fit1"
before=$(sed -n 's/^fit: mean squared log ratio \([0-9.]*\) -> \([0-9.]*\)$/\1/p' "$tmp/fit1")
after=$(sed -n 's/^fit: mean squared log ratio \([0-9.]*\) -> \([0-9.]*\)$/\2/p' "$tmp/fit1")
check "fit reports the error ($before -> $after)" test -n "$before" -a -n "$after"
check "fit does not make it worse" awk -v a="$after" -v b="$before" 'BEGIN {exit !(a <= b)}'
expect 0 "" cost fit "$S"
check "fit: the same bytes twice" cmp -s "$tmp/out" "$tmp/fit1"
# starting far off, the fit must improve a lot
expect 0 "" cost fit "$S" --set conv_eff=1 --set conv_min_us=0 --set launch_us=5
far=$(sed -n 's/^fit: mean squared log ratio \([0-9.]*\) -> \([0-9.]*\)$/\1/p' "$tmp/out")
near=$(sed -n 's/^fit: mean squared log ratio \([0-9.]*\) -> \([0-9.]*\)$/\2/p' "$tmp/out")
check "fit from far off improves ($far -> $near)" awk -v a="$near" -v b="$far" 'BEGIN {exit !(a < b / 2)}'
# the fitted options are accepted as they are printed
opts=$(sed -n 's/^as options: //p' "$tmp/fit1")
expect 0 "" cost compare "$S" $opts
check "compare accepts the fitted options as printed" \
    grep -q "typical factor" "$tmp/out"

# bad command lines
expect 2 "expected 'compare' or 'fit'" cost
expect 2 "expected 'compare' or 'fit'" cost frobnicate "$S"
expect 2 "missing CACHE" cost compare
expect 2 "unknown option '--bogus'" cost compare "$S" --bogus
expect 2 "--set: expected NAME=VALUE" cost compare "$S" --set warp_us=1
expect 2 "--set: bad value for conv_eff" cost compare "$S" --set conv_eff=3
expect 2 "bad value for --worst" cost compare "$S" --worst -1
expect 2 "--cost-set: bad value for sms" optimize models/../tests/data/none.json --out "$tmp/o.json" --cost-set sms=0

# bad files: the file and the line are named
expect 1 "nonexistent.txt: cannot open" cost compare "$tmp/nonexistent.txt"
printf 'dev\tconv2d (1,2)\n' >"$tmp/bad1.txt"
expect 1 "bad1.txt:1: expected DEVICE<TAB>KEY<TAB>MICROSECONDS" cost compare "$tmp/bad1.txt"
printf '# c\ndev\trelu (1,4)\t1.5\ndev\tconv3d (1,2)\t3\n' >"$tmp/bad2.txt"
expect 1 "bad2.txt:3: unknown op 'conv3d'" cost compare "$tmp/bad2.txt"
printf 'dev\tmatmul (2,3);(4,5)\t3\n' >"$tmp/bad3.txt"
expect 1 "bad3.txt:1: .*matmul" cost compare "$tmp/bad3.txt"
printf 'dev\trelu (1,4)\t-1\n' >"$tmp/bad4.txt"
expect 1 "bad4.txt:1: expected DEVICE" cost compare "$tmp/bad4.txt"
printf 'a\trelu (1,4)\t1\nb\trelu (1,8)\t1\n' >"$tmp/two.txt"
expect 1 "two.txt:2: a second device 'b' after 'a': name one with --device" cost compare "$tmp/two.txt"
expect 0 "" cost compare "$tmp/two.txt" --device b
check "--device picks its entries" grep -q "1 configurations of b" "$tmp/out"
expect 1 "no entries for device c" cost compare "$tmp/two.txt" --device c
: >"$tmp/empty.txt"
expect 1 "empty.txt: no entries" cost fit "$tmp/empty.txt"

[ $fail -eq 0 ] && echo "cli_cost: all passed"
exit $fail
