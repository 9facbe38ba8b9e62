# session 12 call O: both GPU test programs on the final code (6aca790's convolution path timing,
# the hold test through memory counts with one capture helper)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg12o.tar.xz)
GPU=$ROOT/.device/new/bin/gpu_test_ops
R=$OUT/o; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_matmul gpu_test_ops; do
  (timeout 280 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
  grep -E "FAIL|passed|exit|workspace held" $R/$t.log | tail -4
done
rm -rf $R/cache; tar czf $OUT/o.tgz -C $OUT o && rm -rf $OUT/o
