# session 12 call C: conv paths timed in CUDA graphs (default) against the launch timing before
# (TASC_RT_CONV_TIMING=launch), same binary (pkg12a): squeezenet, resnet50, inception_v3 batch 1
set -u
ROOT=$(pwd)
R=$OUT/c; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12a.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  for m in squeezenet resnet50 inception_v3; do
    $GPU model $m --out $TMP/$m.json >/dev/null
    $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
    for t in launch graph; do
      TASC_RT_CONV_TIMING=$t timeout 150 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 --no-cpu --profile --verbose > $R/$m-$t.log 2>&1
      echo "$m $t: $(grep 'latency median' $R/$m-$t.log) $(grep 'speedup' $R/$m-$t.log)"
    done
  done )
rm -rf $R/cache; tar czf $OUT/c.tgz -C $OUT c && rm -rf $OUT/c
