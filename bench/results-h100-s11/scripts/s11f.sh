# session 11 call F: both GPU test programs on the final code (the tuner's confirmation round included)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11f.tar.xz)
GPU=$ROOT/.device/new/bin/gpu_test_ops
R=$OUT/f; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_ops gpu_test_matmul; do
  (timeout 200 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
  grep -E "FAIL|passed|exit" $R/$t.log | tail -4
done
rm -rf $R/cache; tar czf $OUT/f.tgz -C $OUT f && rm -rf $OUT/f
