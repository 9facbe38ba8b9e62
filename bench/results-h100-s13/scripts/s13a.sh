# session 13 call A (pkg13a): (1) both GPU test programs (the conv choice cache test among them;
# the implicit GEMMs' shared host code); (2) squeezenet original vs optimized, the paired bench in 4
# fresh processes measuring every conv (TASC_CONV_CACHE=off, as session 12), then 4 sharing one conv
# cache (the first measures, the others read): the spread of the speedup and each run's output
# hashes (--json); (3) nasnet_a's setup with a cold and a warm conv cache.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg13a.tar.xz)
R=$OUT/a; mkdir -p $R
GPU=$ROOT/.device/new/bin/tasc
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_matmul gpu_test_ops; do
  s0=$(date +%s)
  (timeout 280 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
  echo "$t: $(($(date +%s) - s0)) s"; grep -E "FAIL|passed|exit" $R/$t.log | tail -3
done
TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
$GPU model squeezenet --out $TMP/sq.json >/dev/null
$GPU optimize $TMP/sq.json --rules $RULES --out $TMP/sq.opt.json --no-check --quiet
for mode in off on; do
  export TASC_CACHE_DIR=$R/cache-$mode
  for k in 1 2 3 4; do
    TASC_CONV_CACHE=$mode timeout 60 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --json $R/sq-$mode-$k.json > $R/sq-$mode-$k.log 2>&1
    echo "$mode $k: $(grep 'latency median' $R/sq-$mode-$k.log) $(grep 'speedup' $R/sq-$mode-$k.log | head -1) $(grep -o '"o[a-z]*_fnv1a64": "[0-9a-f]*"' $R/sq-$mode-$k.json | tr '\n' ' ') $(grep -o 'measured the paths.*' $R/sq-$mode-$k.log)"
  done
done | tee $R/squeezenet.txt
export TASC_CACHE_DIR=$R/cache-nas
$GPU model nasnet_a --out $TMP/n.json >/dev/null
for k in cold warm; do
  s0=$(date +%s.%N); timeout 200 $GPU bench $TMP/n.json --reps 100 --no-cpu --json $R/nas-$k.json > $R/nas-$k.log 2>&1; s1=$(date +%s.%N)
  echo "nasnet_a $k cache (setup + 120 runs): $(python3 -c "print('%.1f s' % ($s1 - $s0))") $(grep 'latency median' $R/nas-$k.log) $(grep -o 'measured the paths.*' $R/nas-$k.log)"
done | tee $R/nasnet.txt
cp $R/cache-on/conv-*.txt $R/conv-cache-squeezenet.txt 2>/dev/null
rm -rf $TMP $R/cache $R/cache-*; tar czf $OUT/a.tgz -C $OUT a && rm -rf $OUT/a
