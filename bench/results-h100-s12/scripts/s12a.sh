# session 12 call A: squeezenet batch 1 diagnosis on 6a9c81a's tasc (pkg11e): profiles with the
# conv path choices (default and each path forced), nsys kernel durations if nsys is there.
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11e.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/a; mkdir -p $R
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json; m=squeezenet
  $GPU model $m --out $TMP/$m.json >/dev/null
  $GPU optimize $TMP/$m.json --rules $RULES --out $TMP/$m.opt.json --no-check --quiet
  cp $TMP/$m.opt.json $R/
  timeout 150 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 --no-cpu --profile --verbose > $R/prof.log 2>&1
  grep "latency median\|speedup" $R/prof.log
  for p in igemm gemm cudnn direct; do
    TASC_RT_CONV=$p timeout 100 $GPU bench $TMP/$m.json $TMP/$m.opt.json --reps 200 --no-cpu --profile > $R/prof-$p.log 2>&1
    echo "$p: $(grep 'latency median' $R/prof-$p.log)"
  done
  which nsys ncu > $R/tools.txt 2>&1; ls /usr/local/cuda/bin >> $R/tools.txt 2>&1
  if which nsys >/dev/null 2>&1; then
    timeout 120 nsys profile --cuda-graph-trace=node -o $R/ns --force-overwrite true \
      $GPU bench $TMP/$m.opt.json --reps 50 --warmup 5 --no-cpu > $R/nsys-run.log 2>&1
    timeout 120 nsys stats --report cuda_gpu_kern_sum --format csv $R/ns.nsys-rep > $R/nsys-kern.csv 2>&1
    timeout 120 nsys stats --report cuda_gpu_trace --format csv $R/ns.nsys-rep 2>/dev/null | tail -400 > $R/nsys-trace.csv
    rm -f $R/ns.nsys-rep $R/ns.sqlite
  fi )
rm -rf $R/cache; tar czf $OUT/a.tgz -C $OUT a && rm -rf $OUT/a
