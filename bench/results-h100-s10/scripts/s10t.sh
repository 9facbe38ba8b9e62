# session 10 call T: the GPU tests of both precisions (tests package: new/bin/gpu_test_*, lib/)
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf tests10.tar.xz)
R=$OUT/t; mkdir -p $R
GPU=$ROOT/.device/new/bin/gpu_test_ops # what bench/device_env.sh checks for cuDNN and cuBLAS
( . bench/device_env.sh; export LD_LIBRARY_PATH="$ROOT/.device/lib:$LD_LIBRARY_PATH"; export TASC_CACHE_DIR=$(mktemp -d)
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/env.txt; cat .device/new/VERSION >> $R/env.txt
  for t in gpu_test_ops gpu_test_matmul; do
    (timeout 280 .device/new/bin/$t > $R/$t.log 2>&1; echo "exit $?" >> $R/$t.log)
    tail -3 $R/$t.log
  done )
tar czf $OUT/t.tgz -C $OUT t && rm -rf $OUT/t
