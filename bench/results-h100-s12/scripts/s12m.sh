# session 12 call M: the final tasc (pkg12m). (1) nasnet_a's setup time (the slowest setup of the
# zoo: many distinct convolutions); (2) issue 15's four modes on the zoo; (3) squeezenet original
# vs optimized, the paired bench 4 times (fresh processes: the spread of the measured speedup)
set -u
ROOT=$(pwd)
R=$OUT/m; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12m.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  TMP=$(mktemp -d)
  $GPU model nasnet_a --out $TMP/n.json >/dev/null
  s0=$(date +%s.%N); timeout 200 $GPU bench $TMP/n.json --reps 100 --no-cpu > $R/nasnet-setup.log 2>&1; s1=$(date +%s.%N)
  echo "nasnet_a bench (setup + 120 runs): $(python3 -c "print('%.1f s' % ($s1 - $s0))") $(grep 'latency median' $R/nasnet-setup.log)" | tee -a $R/nasnet-setup.log
  rm -rf $TMP )
TASC_ONNX_DIR=/nonexistent timeout 420 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md
( . bench/device_env.sh; export TASC_CACHE_DIR=$R/cache LD_LIBRARY_PATH=$ROOT/.device/lib:$LD_LIBRARY_PATH
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  $GPU model squeezenet --out $TMP/sq.json >/dev/null
  $GPU optimize $TMP/sq.json --rules $RULES --out $TMP/sq.opt.json --no-check --quiet
  for k in 1 2 3 4; do
    timeout 60 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --verbose > $R/pair-$k.log 2>&1
    echo "pair $k: $(grep 'latency median' $R/pair-$k.log) $(grep speedup $R/pair-$k.log)"
  done
  rm -rf $TMP )
rm -rf $R/cache $R/modes/cache; tar czf $OUT/m.tgz -C $OUT m && rm -rf $OUT/m
