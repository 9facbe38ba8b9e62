# session 11 call B: split views (gpu tests + squeezenet/inception b1), exhaustive matmul tuning of
# bert / resnet50 batch 8 and 32 problems (both precisions) into a copy of the shipped H100 table,
# and A/B of those models: first-use tuning (what ships today) vs the grown table.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11b.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/b; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
(timeout 200 .device/new/bin/gpu_test_ops runtime splitview fusion scatter > $R/gto.log 2>&1; echo "exit $?" >> $R/gto.log)
tail -2 $R/gto.log
TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
for m in squeezenet inception_v3; do
  $GPU model $m --out $TMP/$m.json >/dev/null
  $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
  timeout 100 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 > $R/b1-$m.log 2>&1
  grep "latency median\|speedup\|made aliases\|vs CPU" $R/b1-$m.log
done
for m in bert; do for b in 8 32; do
  $GPU model $m --batch $b --out $TMP/$m-$b.json >/dev/null
  $GPU optimize $TMP/$m-$b.json --rules $RULES --out $TMP/$m-$b.opt.json --no-check --quiet
  for p in fp32 3xtf32; do
    TASC_NO_AUTOTUNE=1 TASC_MM_MISSES=$R/misses.raw timeout 100 $GPU bench $TMP/$m-$b.json $TMP/$m-$b.opt.json --precision $p --reps 2 --warmup 1 --no-cpu > /dev/null 2>&1
  done
done; done
sort -u $R/misses.raw > $R/misses.txt; wc -l < $R/misses.txt
cp bench/runtime/matmul_tune.txt $R/matmul_tune.txt
start=$(date +%s)
while read -r epi prec; do
  sizes=$(awk -v e="$epi" -v p="${prec:-fp32}" '$2 == e && ($3 == "" ? "fp32" : $3) == p {print $1}' $R/misses.txt | paste -sd,)
  [ $(($(date +%s) - start)) -ge 220 ] && { echo "budget spent: $epi $prec left" | tee -a $R/tune.log; continue; }
  echo "== $epi ${prec:-fp32}: $sizes" >> $R/tune.log
  timeout 120 $GPU kernels tune --sizes "$sizes" --epilogue "$epi" --precision ${prec:-fp32} --table $R/matmul_tune.txt < /dev/null >> $R/tune.log 2>&1
  echo "exit $? after $(($(date +%s) - start)) s" | tee -a $R/tune.log
done < <(awk '{print $2, ($3 == "" ? "fp32" : $3)}' $R/misses.txt | sort -u)
# A/B: first-use tuned (fresh cache, shipped table) vs the grown table (fresh cache)
for m in bert; do for b in 8 32; do for p in fp32 3xtf32; do
  export TASC_CACHE_DIR=$(mktemp -d)
  timeout 120 $GPU bench $TMP/$m-$b.opt.json --precision $p --reps 3 --warmup 1 --no-cpu > /dev/null 2>&1
  a=$(timeout 120 $GPU bench $TMP/$m-$b.opt.json --precision $p --reps 100 --no-cpu 2>&1 | grep -m1 "latency median" | awk '{print $NF}')
  cp bench/runtime/matmul_tune.txt $TMP/ship.txt; cp $R/matmul_tune.txt bench/runtime/matmul_tune.txt
  export TASC_CACHE_DIR=$(mktemp -d)
  t=$(timeout 120 $GPU bench $TMP/$m-$b.opt.json --precision $p --reps 100 --no-cpu 2>&1 | tee $R/grown-$m-$b-$p.log | grep -m1 "latency median" | awk '{print $NF}')
  cp $TMP/ship.txt bench/runtime/matmul_tune.txt
  echo "$m b$b $p: first-use $a  grown-table $t" | tee -a $R/ab.txt
done; done; done
rm -rf $R/cache; tar czf $OUT/b.tgz -C $OUT b && rm -rf $OUT/b
