# session 13 call E (pkg13e, the final code): both GPU test programs; squeezenet paired twice
# sharing one conv cache (the setup line's wording, the same bits)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg13e.tar.xz)
R=$OUT/e; mkdir -p $R
GPU=$ROOT/.device/new/bin/tasc
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_matmul gpu_test_ops; do
  (timeout 280 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
  grep -E "FAIL|passed|exit" $R/$t.log | tail -3
done
TMP=$(mktemp -d)
$GPU model squeezenet --out $TMP/sq.json >/dev/null
$GPU optimize $TMP/sq.json --rules $ROOT/rules/verified-4.json --out $TMP/sq.opt.json --no-check --quiet
for k in 1 2; do
  timeout 60 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --json $R/sq-$k.json > $R/sq-$k.log 2>&1
  echo "$k: $(grep 'latency median' $R/sq-$k.log) $(grep 'speedup' $R/sq-$k.log | head -1) $(grep -o '"o[a-z]*_fnv1a64": "[0-9a-f]*"' $R/sq-$k.json | tr '\n' ' ') $(grep -o 'measured the paths.*' $R/sq-$k.log | head -1)"
done | tee $R/squeezenet.txt
rm -rf $TMP $R/cache; tar czf $OUT/e.tgz -C $OUT e && rm -rf $OUT/e
