# session 12 call E: resnext50 batch 1 fp32 and resnet50 batch 1 3xtf32, launch- vs graph-timed
# conv paths with --verbose --profile (the two rows of call D where graph timing lost)
set -u
ROOT=$(pwd)
R=$OUT/e; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12a.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  for mp in resnext50:fp32 resnet50:3xtf32; do
    m=${mp%%:*}; p=${mp##*:}
    $GPU model $m --out $TMP/$m.json >/dev/null
    $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
    for t in launch graph launch graph; do
      TASC_RT_CONV_TIMING=$t timeout 200 $GPU bench $TMP/$m.opt.json --reps 200 --no-cpu --precision $p --profile --verbose > $R/$m-$p-$t.log 2>&1
      echo "$m $p $t: $(grep 'latency median' $R/$m-$p-$t.log)"
    done
  done )
rm -rf $R/cache; tar czf $OUT/e.tgz -C $OUT e && rm -rf $OUT/e
