# session 12 call K: the final tasc (pkg12k: conv paths timed in graphs, every cuDNN algorithm
# timed, the fused-cuDNN timing). (1) issue 15's four modes on the zoo; (2) squeezenet original vs
# optimized, the paired bench 4 more times (fresh processes: the spread of the measured speedup);
# (3) conv path timing, launch vs graph, as calls D and G
set -u
ROOT=$(pwd)
R=$OUT/k; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12k.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
TASC_ONNX_DIR=/nonexistent timeout 330 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  $GPU model squeezenet --out $TMP/sq.json >/dev/null
  $GPU optimize $TMP/sq.json --rules $RULES --out $TMP/sq.opt.json --no-check --quiet
  for k in 1 2 3 4; do
    timeout 100 $GPU bench $TMP/sq.json $TMP/sq.opt.json --reps 200 --no-cpu --verbose > $R/pair-$k.log 2>&1
    echo "pair $k: $(grep 'latency median' $R/pair-$k.log) $(grep speedup $R/pair-$k.log)"
  done
  echo "| model | batch | precision | launch-timed ms | graph-timed ms | launch / graph |" > $R/d.md
  echo "|---|---:|---|---:|---:|---:|" >> $R/d.md
  run() { # model batch precision
    $GPU model $1 --batch $2 --out $TMP/$1-b$2.json >/dev/null
    $GPU optimize $TMP/$1-b$2.json --rules $RULES --out $TMP/$1-b$2.opt.json --no-check --quiet; local ms=()
    for t in launch graph; do
      TASC_RT_CONV_TIMING=$t timeout 200 $GPU bench $TMP/$1-b$2.opt.json --reps 200 --no-cpu --precision $3 --json $TMP/r.json > $R/$1-b$2-$3-$t.log 2>&1
      ms+=($(tr -d '\n' < $TMP/r.json | grep -o '"median_ms": *[0-9.]*' | head -1 | sed 's/.*: *//'))
    done
    echo "| $1 | $2 | $3 | ${ms[0]} | ${ms[1]} | $(python3 -c "print('%.3f' % (${ms[0]}/${ms[1]}))") |" | tee -a $R/d.md
  }
  for m in squeezenet resnext50 inception_v3; do run $m 1 fp32; done
  run resnet50 32 3xtf32
  rm -rf $TMP )
rm -rf $R/cache $R/modes/cache; tar czf $OUT/k.tgz -C $OUT k && rm -rf $OUT/k
