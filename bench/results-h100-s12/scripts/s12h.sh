# session 12 call H: issue 15's four modes on the shared ONNX models (carried in .device/onnx),
# the final tasc (pkg12n, the code of call M)
set -u
ROOT=$(pwd)
R=$OUT/h; mkdir -p $R
rm -rf .device/new .device/onnx; (cd .device && tar xJf pkg12n.tar.xz && tar xJf onnx.tar.xz)
TASC_ZOO_MODELS= TASC_ONNX_DIR=$ROOT/.device/onnx timeout 560 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md; tail -3 $R/modes.out
rm -rf $R/modes/cache; tar czf $OUT/h.tgz -C $OUT h && rm -rf $OUT/h
