# session 13 call D (pkg13a): why squeezenet's original ran 0.277 ms in the process that measured
# its conv paths and 0.288 ms in processes that read them (same kernels, same output bits):
# original alone, warm cache (a/'s file) vs off, default warm-up vs 2000 warm-up runs, --profile
set -u
ROOT=$(pwd)
R=$OUT/d; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg13a.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
TMP=$(mktemp -d)
$GPU model squeezenet --out $TMP/sq.json >/dev/null
mkdir -p $R/warm; cp .device/conv-sq.txt $R/warm/conv-NVIDIA_H100_80GB_HBM3_cc_9.0_132_SMs_1980_MHz.txt
for k in 1 2; do
  for mode in warm off warm2000 off2000; do
    case $mode in warm*) export TASC_CACHE_DIR=$R/warm; CC=on;; *) export TASC_CACHE_DIR=$R/cache; CC=off;; esac
    case $mode in *2000) W=2000;; *) W=20;; esac
    TASC_CONV_CACHE=$CC timeout 60 $GPU bench $TMP/sq.json --reps 200 --warmup $W --no-cpu --json $R/$mode-$k.json --profile > $R/$mode-$k.log 2>&1
    echo "$mode $k: $(grep 'latency median' $R/$mode-$k.log) $(grep -o '"original_fnv1a64": "[0-9a-f]*"' $R/$mode-$k.json)"
  done
done | tee $R/summary.txt
rm -rf $TMP $R/cache; tar czf $OUT/d.tgz -C $OUT d && rm -rf $OUT/d
