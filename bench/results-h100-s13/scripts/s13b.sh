# session 13 call B (pkg13a): issue 15's four modes on the zoo with the final code; one conv
# choice cache for the whole run (device_prelude's OUT/cache), so every mode of a model runs the
# original graph on the same kernels
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg13a.tar.xz)
R=$OUT/b; mkdir -p $R
TASC_ONNX_DIR=/nonexistent timeout 560 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md; tail -3 $R/modes.out
cp $R/modes/cache/conv-*.txt $R/conv-cache.txt 2>/dev/null
rm -rf $R/modes/cache; tar czf $OUT/b.tgz -C $OUT b && rm -rf $OUT/b
