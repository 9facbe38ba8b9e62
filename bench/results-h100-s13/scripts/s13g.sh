# session 13 call G (pkg13e): is the spread of f/ (same kernels, 0.258 vs 0.273 ms) lazy module
# loading? squeezenet's original alone, cache warm against off, with CUDA_MODULE_LOADING=EAGER and
# the default (lazy), twice each
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg13e.tar.xz)
R=$OUT/g; mkdir -p $R
GPU=$ROOT/.device/new/bin/tasc
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
TMP=$(mktemp -d)
$GPU model squeezenet --out $TMP/sq.json >/dev/null
mkdir -p $R/warm; cp .device/conv-sq.txt $R/warm/conv-NVIDIA_H100_80GB_HBM3_cc_9.0_132_SMs_1980_MHz.txt
for k in 1 2; do
  for load in LAZY EAGER; do
    for mode in warm off; do
      case $mode in warm) export TASC_CACHE_DIR=$R/warm; CC=on;; *) export TASC_CACHE_DIR=$R/cache; CC=off;; esac
      s0=$(date +%s.%N)
      CUDA_MODULE_LOADING=$load TASC_CONV_CACHE=$CC timeout 120 $GPU bench $TMP/sq.json --reps 1000 --no-cpu > $R/$load-$mode-$k.log 2>&1
      s1=$(date +%s.%N)
      echo "$load $mode $k: $(grep 'latency median' $R/$load-$mode-$k.log) ($(python3 -c "print('%.1f s' % ($s1 - $s0))") in all)"
    done
  done
done | tee $R/summary.txt
rm -rf $TMP $R/cache; tar czf $OUT/g.tgz -C $OUT g && rm -rf $OUT/g
