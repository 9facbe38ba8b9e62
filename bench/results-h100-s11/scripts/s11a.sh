# session 11 call A: diagnosis. squeezenet / inception_v3 batch 1 profiles (original, optimized) with
# conv path choices; bert b8/b32 tasc vs PyTorch profiles; bert b1 rules-only vs default profile.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11a.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/a; mkdir -p $R
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  for m in squeezenet inception_v3; do
    $GPU model $m --out $TMP/$m.json >/dev/null
    $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
    timeout 100 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
    timeout 150 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 --no-cpu --profile --verbose > $R/prof-$m.log 2>&1
    grep "latency median\|speedup" $R/prof-$m.log
  done
  $GPU model bert --out $TMP/bert.json >/dev/null
  $GPU optimize $TMP/bert.json --rules $RULES --builtins minimal --out $TMP/bert.min.json --no-check --quiet
  $GPU optimize $TMP/bert.json --rules $RULES --out $TMP/bert.opt.json --no-check --quiet
  timeout 150 $GPU bench $TMP/bert.opt.json $TMP/bert.min.json --reps 200 --no-cpu --profile --verbose > $R/prof-bert-min.log 2>&1
  grep "latency median\|speedup" $R/prof-bert-min.log
  timeout 400 bash bench/zoo/profile_device.sh $R/bp bert "8 32" > $R/bp.out 2>&1
  grep -h "latency median\|GPU kernel time" $R/bp/*.log )
rm -rf $R/cache $R/bp/cache; tar czf $OUT/a.tgz -C $OUT a && rm -rf $OUT/a
