# session 13 call F (pkg13e): squeezenet's original alone, the conv cache warm against off, twice
# each, with the GPU's SM clock, memory clock and power sampled every 20 ms during each run
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg13e.tar.xz)
R=$OUT/f; mkdir -p $R
GPU=$ROOT/.device/new/bin/tasc
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
TMP=$(mktemp -d)
$GPU model squeezenet --out $TMP/sq.json >/dev/null
mkdir -p $R/warm; cp .device/conv-sq.txt $R/warm/conv-NVIDIA_H100_80GB_HBM3_cc_9.0_132_SMs_1980_MHz.txt
for k in 1 2; do
  for mode in warm off; do
    case $mode in warm) export TASC_CACHE_DIR=$R/warm; CC=on;; *) export TASC_CACHE_DIR=$R/cache; CC=off;; esac
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 20 > $R/smi-$mode-$k.csv 2>&1 &
    SMI=$!
    TASC_CONV_CACHE=$CC timeout 60 $GPU bench $TMP/sq.json --reps 2000 --no-cpu --verbose > $R/$mode-$k.log 2>&1
    kill $SMI; wait $SMI 2>/dev/null
    echo "$mode $k: $(grep 'latency median' $R/$mode-$k.log) sm MHz (min/median/max of samples): $(cut -d, -f2 $R/smi-$mode-$k.csv | tr -dc '0-9\n' | sort -n | awk '{a[NR]=$1} END {print a[1], a[int((NR+1)/2)], a[NR], NR " samples"}')"
  done
done | tee $R/summary.txt
rm -rf $TMP $R/cache; tar czf $OUT/f.tgz -C $OUT f && rm -rf $OUT/f
