# session 11 call D: the whole GPU test suite of both precisions (gpu_test_ops, gpu_test_matmul)
# on the package with every piece of the session, then resnet50 batch 8/32 at both precisions.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11d.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/d; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_ops gpu_test_matmul; do
  start=$(date +%s)
  (timeout 330 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $? after $(($(date +%s) - start)) s" >> $R/$t.log)
  grep -E "FAIL|passed|exit" $R/$t.log | tail -5
done
TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
for b in 8 32; do
  $GPU model resnet50 --batch $b --out $TMP/r.json >/dev/null
  $GPU optimize $TMP/r.json --rules $RULES --out $TMP/r.opt.json --no-check --quiet
  for p in fp32 3xtf32; do
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 100 --no-cpu --verbose > $R/r50-b$b-$p.log 2>&1
    echo "resnet50 b$b $p: $(grep -m1 'latency median' $R/r50-b$b-$p.log | awk '{print $NF}')"
  done
done
rm -rf $R/cache; tar czf $OUT/d.tgz -C $OUT d && rm -rf $OUT/d
