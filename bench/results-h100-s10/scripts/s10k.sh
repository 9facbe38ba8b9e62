# session 10 call K: after the oc_conv_setup split -- conv, conv3, fusion, runtime, models groups; resnet50 b32 both precisions
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg10k.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/k; mkdir -p $R
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  (timeout 240 .device/new/bin/gpu_test_ops fusion conv3 conv runtime models > $R/gto.log 2>&1; echo "exit $?" >> $R/gto.log)
  grep -i "fusion:\|passed\|exit" $R/gto.log | tail -4
  TMP=$(mktemp -d)
  $GPU model resnet50 --batch 32 --out $TMP/r.json >/dev/null
  $GPU optimize $TMP/r.json --rules $ROOT/rules/verified-4.json --out $TMP/r.opt.json --no-check --quiet
  for p in fp32 3xtf32; do
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 50 --no-cpu --verbose > $R/r50-b32-$p.log 2>&1
    echo "b32 $p: $(grep -m1 'latency median' $R/r50-b32-$p.log)"
  done )
rm -rf $R/cache; tar czf $OUT/k.tgz -C $OUT k && rm -rf $OUT/k
