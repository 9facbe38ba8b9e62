# session 12 call G: the final tasc (pkg12g). (1) conv path timing, launch vs graph, as call D,
# with the fused-cuDNN timing fix; (2) node checks (--check-nodes) and the planner's counts on
# bert (producer fusions, scatter stores) at fp32 and 3xtf32, resnet50 and nasnet_a (conv epilogue
# fusion); (3) issue 15's four modes on the zoo (bench/optimize/run_modes_device.sh)
set -u
ROOT=$(pwd)
R=$OUT/g; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12g.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
  TMP=$(mktemp -d); RULES=$ROOT/rules/verified-4.json
  echo "| model | batch | precision | launch-timed ms | graph-timed ms | launch / graph |" > $R/d.md
  echo "|---|---:|---|---:|---:|---:|" >> $R/d.md
  mk() { [ -f $TMP/$1-b$2.opt.json ] || { $GPU model $1 --batch $2 --out $TMP/$1-b$2.json >/dev/null;
         $GPU optimize $TMP/$1-b$2.json --rules $RULES --out $TMP/$1-b$2.opt.json --no-check --quiet; }; }
  run() { # model batch precision
    mk $1 $2; local ms=()
    for t in launch graph; do
      TASC_RT_CONV_TIMING=$t timeout 200 $GPU bench $TMP/$1-b$2.opt.json --reps 200 --no-cpu --precision $3 --json $TMP/r.json > $R/$1-b$2-$3-$t.log 2>&1
      ms+=($(tr -d '\n' < $TMP/r.json | grep -o '"median_ms": *[0-9.]*' | head -1 | sed 's/.*: *//'))
    done
    echo "| $1 | $2 | $3 | ${ms[0]} | ${ms[1]} | $(python3 -c "print('%.3f' % (${ms[0]}/${ms[1]}))") |" | tee -a $R/d.md
  }
  for m in squeezenet resnet50 resnext50 inception_v3 nasnet_a; do run $m 1 fp32; done
  for b in 8 32; do for p in fp32 3xtf32; do run resnet50 $b $p; done; done
  for mp in bert:1:fp32 bert:1:3xtf32 bert:8:3xtf32 resnet50:1:fp32 nasnet_a:1:fp32; do
    IFS=: read m b p <<< "$mp"; mk $m $b
    timeout 200 $GPU bench $TMP/$m-b$b.json $TMP/$m-b$b.opt.json --reps 100 --precision $p --check-nodes 1e-3 --verbose > $R/check-$m-b$b-$p.log 2>&1
    echo "check $m b$b $p: rc=$? $(grep 'node check (' $R/check-$m-b$b-$p.log | tr '\n' ';') $(grep 'nodes fused\|matmul stores\|as views' $R/check-$m-b$b-$p.log | tr -s ' ' | tr '\n' ';')"
  done
  rm -rf $TMP )
TASC_ONNX_DIR=/nonexistent timeout 400 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md
rm -rf $R/cache $R/modes/cache; tar czf $OUT/g.tgz -C $OUT g && rm -rf $OUT/g
