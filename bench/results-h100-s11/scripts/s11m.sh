# session 11 call M: issue 15's four modes on the zoo (bench/optimize/run_modes_device.sh), then the
# first-use check (bench/runtime/autotune_check.sh) on the same binary
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11z.tar.xz)
R=$OUT/m; mkdir -p $R
timeout 420 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md
ln -sfn $ROOT/.device/lib $ROOT/.device/new/lib
AT_DIR=$ROOT/.device/new timeout 150 bash bench/runtime/autotune_check.sh $R/at > $R/at.out 2>&1
cat $R/at/check.log 2>/dev/null | tail -12
rm -rf $R/modes/cache; cp .device/new/VERSION $R/; tar czf $OUT/m.tgz -C $OUT m && rm -rf $OUT/m
