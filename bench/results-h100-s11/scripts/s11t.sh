# session 11 call T: the whole gpu_test_ops (every group) of the package PKG
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf ${PKG:-pkg11c}.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/t; mkdir -p $R
. bench/device_env.sh; device_prelude $R; cat .device/new/VERSION >> $R/env.txt
for t in ${TESTS:-gpu_test_ops}; do
  [ -x .device/new/bin/$t ] || continue
  start=$(date +%s)
  (timeout 420 .device/new/bin/$t $TARGS > $R/$t.log 2>&1; echo "exit $? after $(($(date +%s) - start)) s" >> $R/$t.log)
  grep -E "FAIL|fail|passed|exit" $R/$t.log | tail -8
done
rm -rf $R/cache; tar czf $OUT/t.tgz -C $OUT t && rm -rf $OUT/t
