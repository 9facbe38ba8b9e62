# session 11 call G: the matmul kernels at 4096 / 8192 and BERT's products (both precisions, cuBLAS in
# the same call) on the final code; resnet50 batch 1 and 32 profiles at both precisions (the misses)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11e.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/g; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
timeout 200 $GPU kernels bench --sizes 128x768x3072,1024x3072x768,4096x768x3072,4096,8192 --precision both --versions tuned,3xtf32 --fused none --reps 20 --out $R/kbench.md > $R/kbench.log 2>&1
grep -A8 "speedup\|x cuBLAS" $R/kbench.md | head -20
TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
for b in 1 32; do
  $GPU model resnet50 --batch $b --out $TMP/r.json >/dev/null
  $GPU optimize $TMP/r.json --rules $RULES --out $TMP/r.opt.json --no-check --quiet
  for p in fp32 3xtf32; do
    timeout 100 $GPU bench $TMP/r.opt.json --precision $p --reps 5 --warmup 1 --no-cpu > /dev/null 2>&1
    timeout 120 $GPU bench $TMP/r.opt.json --precision $p --reps 100 --no-cpu --profile > $R/prof-r50-b$b-$p.log 2>&1
    echo "resnet50 b$b $p: $(grep -m1 'latency median' $R/prof-r50-b$b-$p.log | awk '{print $NF}')"
  done
done
rm -rf $R/cache; tar czf $OUT/g.tgz -C $OUT g && rm -rf $OUT/g
