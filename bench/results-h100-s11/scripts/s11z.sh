# session 11 call Z: the zoo (resnet50, bert) at batch 1/8/32, fp32 and 3xtf32, PyTorch CUDA graphs in the same call
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11z.tar.xz)
R=$OUT/z; mkdir -p $R
TASC_ZOO_MODELS="resnet50 bert" timeout 570 bash bench/zoo/run_device.sh $R/zoo "1 8 32" "fp32 3xtf32" > $R/zoo.out 2>&1
cat $R/zoo/zoo.md
rm -rf $R/zoo/cache; cp .device/new/VERSION $R/; tar czf $OUT/z.tgz -C $OUT z && rm -rf $OUT/z
