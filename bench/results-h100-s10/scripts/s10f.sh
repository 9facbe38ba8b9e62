# session 10 call F: fusion + conv tests, resnet50 b8/b32 at both precisions, fused and not (A/B)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg10f.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/f; mkdir -p $R
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  (timeout 240 .device/new/bin/gpu_test_ops fusion conv3 conv runtime models scatter3 > $R/gto.log 2>&1; echo "exit $?" >> $R/gto.log)
  grep -i "fusion\|rel L2\|fail\|passed\|exit" $R/gto.log | tail -12
  TMP=$(mktemp -d)
  for b in 8 32; do
    $GPU model resnet50 --batch $b --out $TMP/r.json >/dev/null
    $GPU optimize $TMP/r.json --rules $ROOT/rules/verified-4.json --out $TMP/r.opt.json --no-check --quiet
    for p in fp32 3xtf32; do
      timeout 80 $GPU bench $TMP/r.opt.json --precision $p --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
      timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 50 --no-cpu --profile --verbose > $R/prof-r50-b$b-$p.log 2>&1
      timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 50 --no-cpu --no-fuse > $R/nofuse-r50-b$b-$p.log 2>&1
      echo "b$b $p: $(grep -m1 'latency median' $R/prof-r50-b$b-$p.log)  no-fuse: $(grep -m1 'latency median' $R/nofuse-r50-b$b-$p.log)"
    done
  done
  $GPU model resnet50 --out $TMP/r1.json >/dev/null
  timeout 100 $GPU bench $TMP/r1.json --optimize --rules $ROOT/rules/verified-4.json --reps 100 > $R/r50-b1-check.log 2>&1
  grep "latency median\|speedup\|vs CPU\|adds, relus" $R/r50-b1-check.log )
rm -rf $R/cache; tar czf $OUT/f.tgz -C $OUT f && rm -rf $OUT/f
