# session 12 call D: conv path timing in CUDA graphs (default) vs launch by launch
# (TASC_RT_CONV_TIMING=launch), same binary (pkg12a), every conv model of the zoo, the optimized
# graph; batch 1 for all, batch 8 and 32 for resnet50 at fp32 and 3xtf32
set -u
ROOT=$(pwd)
R=$OUT/d; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12a.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  echo "| model | batch | precision | launch-timed ms | graph-timed ms | launch / graph |" > $R/d.md
  echo "|---|---:|---|---:|---:|---:|" >> $R/d.md
  run() { # model batch precision
    local m=$1 b=$2 p=$3 f=$TMP/$1-b$2.opt.json
    [ -f $f ] || { $GPU model $m --batch $b --out $TMP/$m-b$b.json >/dev/null;
                   $GPU optimize $TMP/$m-b$b.json --rules $RULES --out $f --no-check --quiet; }
    local ms=()
    for t in launch graph; do
      TASC_RT_CONV_TIMING=$t timeout 200 $GPU bench $f --reps 200 --no-cpu --precision $p --json $TMP/r.json > $R/$m-b$b-$p-$t.log 2>&1
      ms+=($(tr -d '\n' < $TMP/r.json | grep -o '"median_ms": *[0-9.]*' | head -1 | sed 's/.*: *//'))
    done
    echo "| $m | $b | $p | ${ms[0]} | ${ms[1]} | $(python3 -c "print('%.3f' % (${ms[0]}/${ms[1]}))") |" | tee -a $R/d.md
  }
  for m in squeezenet resnet50 resnext50 inception_v3 nasnet_a; do run $m 1 fp32; done
  for b in 8 32; do for p in fp32 3xtf32; do run resnet50 $b $p; done; done
  run resnet50 1 3xtf32 )
rm -rf $R/cache; tar czf $OUT/d.tgz -C $OUT d && rm -rf $OUT/d
