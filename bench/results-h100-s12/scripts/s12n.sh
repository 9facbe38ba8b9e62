# session 12 call N: gpu_test_matmul built with mm_workspace_hold a no-op (a negative check of the
# test "split-K workspace held across a graph": it must fail without the hold), and as it is
set -u
ROOT=$(pwd)
R=$OUT/n; mkdir -p $R
rm -rf .device/neg .device/lib; (cd .device && tar xJf neg12.tar.xz)
GPU=$ROOT/.device/neg/gpu_test_matmul
. bench/device_env.sh; device_prelude $R
for t in gpu_test_matmul_nohold gpu_test_matmul; do
  timeout 200 .device/neg/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log
  echo "$t: $(grep -E 'workspace held|passed|exit' $R/$t.log | tail -3 | tr '\n' ' ')"
done
rm -rf $R/cache; tar czf $OUT/n.tgz -C $OUT n && rm -rf $OUT/n
