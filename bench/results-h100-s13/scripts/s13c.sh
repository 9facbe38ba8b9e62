# session 13 call C (pkg13a): issue 15's four modes on the shared ONNX models (carried in
# .device/onnx), the final code, one conv choice cache for the run
set -u
ROOT=$(pwd)
R=$OUT/c; mkdir -p $R
rm -rf .device/new .device/onnx; (cd .device && tar xJf pkg13t.tar.xz && tar xJf onnx.tar.xz)
TASC_ZOO_MODELS= TASC_ONNX_DIR=$ROOT/.device/onnx timeout 560 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md; tail -3 $R/modes.out
rm -rf $R/modes/cache; tar czf $OUT/c.tgz -C $OUT c && rm -rf $OUT/c
