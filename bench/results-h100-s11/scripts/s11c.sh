# session 11 call C: GPU tests of the new pieces (normfuse, views, convf) and regressions; batch-1
# squeezenet / inception_v3 / nasnet_a (original vs optimized, conv path choices); bert batch 8/32
# FP32 fused vs --no-fuse with profile; resnet50 batch 8/32 both precisions.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf ${PKG:-pkg11c}.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/c; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
(timeout 300 .device/new/bin/gpu_test_ops ${GROUPS:-normfuse splitview convf conv conv3 fusion runtime models pools scatter scatter3} > $R/gto.log 2>&1; echo "exit $?" >> $R/gto.log)
grep -E "^[a-z0-9]+: |FAIL|passed|exit" $R/gto.log | tail -15
TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
for m in squeezenet inception_v3 nasnet_a; do
  $GPU model $m --out $TMP/$m.json >/dev/null
  $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
  timeout 100 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
  timeout 150 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 --profile --verbose > $R/b1-$m.log 2>&1
  echo "$m: $(grep -m1 'latency median' $R/b1-$m.log) $(grep -m1 'speedup' $R/b1-$m.log | awk '{print $NF}') views: $(grep -m1 'as views' $R/b1-$m.log | awk '{print $(NF-1), $NF}') cpu: $(grep -c 'vs CPU' $R/b1-$m.log)"
done
for b in 8 32; do
  $GPU model bert --batch $b --out $TMP/bert.json >/dev/null
  $GPU optimize $TMP/bert.json --rules $RULES --out $TMP/bert.opt.json --no-check --quiet
  timeout 100 $GPU bench $TMP/bert.opt.json --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
  timeout 150 $GPU bench $TMP/bert.opt.json --reps 200 --no-cpu --profile > $R/bert-b$b.log 2>&1
  timeout 150 $GPU bench $TMP/bert.opt.json --reps 200 --no-cpu --no-fuse > $R/bert-b$b-nofuse.log 2>&1
  echo "bert b$b fused: $(grep -m1 'latency median' $R/bert-b$b.log | awk '{print $NF}') no-fuse: $(grep -m1 'latency median' $R/bert-b$b-nofuse.log | awk '{print $NF}') fused nodes: $(grep -m1 'epilogues\|fused' $R/bert-b$b.log)"
done
$GPU model bert --out $TMP/bert1.json >/dev/null
timeout 150 $GPU bench $TMP/bert1.json --optimize --rules $RULES --reps 100 --check-nodes 1e-4 > $R/bert-b1-check.log 2>&1
echo "bert b1 check: exit $? $(grep -m1 'speedup' $R/bert-b1-check.log)"
for b in 8 32; do
  $GPU model resnet50 --batch $b --out $TMP/r.json >/dev/null
  $GPU optimize $TMP/r.json --rules $RULES --out $TMP/r.opt.json --no-check --quiet
  for p in fp32 3xtf32; do
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 100 --no-cpu --verbose > $R/r50-b$b-$p.log 2>&1
    echo "resnet50 b$b $p: $(grep -m1 'latency median' $R/r50-b$b-$p.log | awk '{print $NF}')"
  done
done
rm -rf $R/cache; tar czf $OUT/c.tgz -C $OUT c && rm -rf $OUT/c
