# session 12 call J: squeezenet original vs optimized, the paired bench 4 times (fresh processes,
# --verbose): does the original's latency vary with its path choices or with the pairing?
set -u
ROOT=$(pwd)
R=$OUT/j; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12g.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R
  TMP=$(mktemp -d)
  $GPU model squeezenet --out $TMP/sq.json >/dev/null
  $GPU optimize $TMP/sq.json --rules $ROOT/rules/verified-4.json --out $TMP/sq.opt.json --no-check --quiet
  for k in 1 2 3 4; do
    timeout 100 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --verbose > $R/pair-$k.log 2>&1
    echo "pair $k: $(grep 'latency median' $R/pair-$k.log) $(grep speedup $R/pair-$k.log)"
  done
  for k in 1 2; do
    TASC_RT_CONV_TIMING=launch timeout 100 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --verbose > $R/pairL-$k.log 2>&1
    echo "pair launch-timed $k: $(grep 'latency median' $R/pairL-$k.log) $(grep speedup $R/pairL-$k.log)"
  done )
rm -rf $R/cache; tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j
