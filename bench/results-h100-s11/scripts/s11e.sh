# session 11 call E: the first-use check (bench/runtime/autotune_check.sh) with the confirmation round
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11e.tar.xz)
R=$OUT/e; mkdir -p $R
ln -sfn $ROOT/.device/lib $ROOT/.device/new/lib
AT_DIR=$ROOT/.device/new timeout 200 bash bench/runtime/autotune_check.sh $R/at > $R/at.out 2>&1
tail -12 $R/at.out
cp .device/new/VERSION $R/; tar czf $OUT/e.tgz -C $OUT e && rm -rf $OUT/e
