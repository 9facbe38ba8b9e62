# session 12 call B: the tuned FP32 matmul against cuBLAS on squeezenet's batch-1 conv products
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg11e.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
R=$OUT/b; mkdir -p $R
( . bench/device_env.sh; device_prelude $R
  S=512x169x576,256x729x288,1000x169x512,128x3025x144,384x169x432,64x169x512,48x169x384,16x3025x128,32x729x256,64x12321x27
  timeout 200 $GPU kernels bench --sizes $S --versions tuned --reps 50 --out $R/kb.md > $R/kb.log 2>&1
  cat $R/kb.md | head -60 )
rm -rf $R/cache; tar czf $OUT/b.tgz -C $OUT b && rm -rf $OUT/b
