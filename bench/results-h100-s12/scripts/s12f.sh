# session 12 call F: both GPU test programs on the session's code (graph-timed conv paths, the
# fused cuDNN timing, one workspace grower and the hold, the planner's classification step)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg12f.tar.xz)
GPU=$ROOT/.device/new/bin/gpu_test_ops
R=$OUT/f; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in gpu_test_matmul gpu_test_ops; do
  (timeout 280 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
  grep -E "FAIL|passed|exit|workspace held" $R/$t.log | tail -5
done
rm -rf $R/cache; tar czf $OUT/f.tgz -C $OUT f && rm -rf $OUT/f
